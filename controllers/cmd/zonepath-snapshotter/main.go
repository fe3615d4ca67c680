// Command zonepath-snapshotter is a CSI snapshotter sidecar for any CSI
// driver, flag-compatible with csi-snapshotter, that also implements
// KEP-5943 (topology for volume snapshots) behind
// --feature-gates=VolumeSnapshotTopology=true. See package
// github.com/zonepath/zonepath/controllers/snapshotter.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	flag "github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/zonepath/zonepath/controllers/snapshotter"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "devel"

func main() {
	cmd := bootstrap.NewCommand("zonepath-snapshotter", version, utilfeature.DefaultMutableFeatureGate)
	cfg := parseFlags(cmd)
	if cfg.Sidecar.ShowVersion {
		fmt.Println(os.Args[0], version)
		return
	}
	cmd.Run(func(ctx context.Context) error { return snapshotter.Run(ctx, cfg) })
}

// parseFlags reads csi-snapshotter's flags, the shared sidecar flags, the
// logging flags (-v, --logging-format, ...) and --feature-gates.
func parseFlags(cmd *bootstrap.Command) snapshotter.Config {
	sidecar := bootstrap.SidecarFlags(flag.CommandLine)
	cmd.AddFlags(flag.CommandLine)
	var cfg snapshotter.Config
	o := &cfg.Options
	flag.DurationVar(&o.Timeout, "timeout", time.Minute, "The timeout for any RPCs to the CSI driver.")
	flag.StringVar(&o.SnapshotNamePrefix, "snapshot-name-prefix", "snapshot", "Prefix to apply to the name of a created snapshot.")
	flag.IntVar(&o.SnapshotNameUUIDLength, "snapshot-name-uuid-length", -1, "Length in characters of the VolumeSnapshot UID in a created snapshot's name, dashes removed; -1: the whole UID with dashes.")
	flag.BoolVar(&cfg.ExtraCreateMetadata, "extra-create-metadata", false, "Add VolumeSnapshot and VolumeSnapshotContent names to the CreateSnapshot parameters the driver sees.")
	flag.IntVar(&o.Workers, "worker-threads", 10, "Number of worker threads.")
	flag.DurationVar(&o.RetryIntervalStart, "retry-interval-start", time.Second, "Initial retry interval of a failed snapshot creation or deletion; it doubles with each failure, up to --retry-interval-max.")
	flag.DurationVar(&o.RetryIntervalMax, "retry-interval-max", 5*time.Minute, "Maximum retry interval of a failed snapshot creation or deletion.")
	flag.DurationVar(&o.ResyncPeriod, "resync-period", 15*time.Minute, "Resync interval of the controller.")
	flag.Parse()
	cfg.Sidecar = *sidecar
	return cfg
}
