// Command zonepath-snapshotter is a CSI snapshotter sidecar for any CSI
// driver, flag-compatible with csi-snapshotter, that also implements
// KEP-5943 (topology for volume snapshots) behind
// --feature-gates=VolumeSnapshotTopology=true. See package
// github.com/zonepath/zonepath/controllers/snapshotter.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/snapshotter"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "devel"

func main() {
	cfg := parseFlags()
	if cfg.Sidecar.ShowVersion {
		fmt.Println(os.Args[0], version)
		return
	}
	klog.InfoS("Version", "version", version)
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if err := snapshotter.Run(ctx, cfg); err != nil {
		klog.ErrorS(err, "zonepath-snapshotter failed")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	klog.Flush()
}

// parseFlags reads csi-snapshotter's flags plus --feature-gates. klog and
// csi-lib-utils declare theirs as Go flags; they are parsed with pflag,
// which the shared gate's flag needs, so long names take two dashes
// (--csi-address), and -v stays a shorthand.
func parseFlags() snapshotter.Config {
	klog.InitFlags(nil)
	standardflags.RegisterCommonFlags(flag.CommandLine)
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
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	utilfeature.DefaultMutableFeatureGate.AddFlag(pflag.CommandLine)
	pflag.Parse()
	cfg.Sidecar = standardflags.Configuration
	return cfg
}
