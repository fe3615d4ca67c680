// Command zonepath-snapshotter is a CSI snapshotter sidecar for any CSI
// driver, flag-compatible with csi-snapshotter, that also implements
// KEP-5943 (topology for volume snapshots) behind
// --feature-gates=VolumeSnapshotTopology=true. See package
// github.com/zonepath/zonepath/controllers/snapshotter.
package main

import (
	"context"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/zonepath/zonepath/controllers/snapshotter"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "devel"

func main() {
	var cfg snapshotter.Config
	bootstrap.SidecarMain("zonepath-snapshotter", version, &cfg.Sidecar,
		func(fs *flag.FlagSet) { addFlags(fs, &cfg) },
		func(ctx context.Context) error { return snapshotter.Run(ctx, cfg) })
}

// addFlags registers csi-snapshotter's own flags on fs, defaults included.
func addFlags(fs *flag.FlagSet, cfg *snapshotter.Config) {
	o := &cfg.Options
	fs.DurationVar(&o.Timeout, "timeout", time.Minute, "The timeout for any RPCs to the CSI driver.")
	fs.StringVar(&o.SnapshotNamePrefix, "snapshot-name-prefix", "snapshot", "Prefix to apply to the name of a created snapshot.")
	fs.IntVar(&o.SnapshotNameUUIDLength, "snapshot-name-uuid-length", -1, "Length in characters of the VolumeSnapshot UID in a created snapshot's name, dashes removed; -1: the whole UID with dashes.")
	fs.StringVar(&o.GroupSnapshotNamePrefix, "groupsnapshot-name-prefix", "groupsnapshot", "Prefix to apply to the name of a created group snapshot.")
	fs.IntVar(&o.GroupSnapshotNameUUIDLength, "groupsnapshot-name-uuid-length", -1, "Length in characters of the generated UID in a created group snapshot's name; -1: not truncated.")
	fs.BoolVar(&cfg.ExtraCreateMetadata, "extra-create-metadata", false, "Add VolumeSnapshot and VolumeSnapshotContent names to the CreateSnapshot parameters the driver sees.")
	fs.IntVar(&o.Workers, "worker-threads", 10, "Number of worker threads.")
	fs.DurationVar(&o.RetryIntervalStart, "retry-interval-start", time.Second, "Initial retry interval of a failed snapshot creation or deletion; it doubles with each failure, up to --retry-interval-max.")
	fs.DurationVar(&o.RetryIntervalMax, "retry-interval-max", 5*time.Minute, "Maximum retry interval of a failed snapshot creation or deletion.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", 15*time.Minute, "Resync interval of the controller.")
}
