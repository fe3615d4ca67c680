// Command zonepath-resizer is a CSI resizer sidecar for any CSI driver,
// flag-compatible with upstream csi-resizer for the flags deploy/ uses,
// for clusters that cannot pull csi-resizer's image (its Go module is not
// served here). See package github.com/zonepath/zonepath/controllers/resizer.
package main

import (
	"context"
	"time"

	flag "github.com/spf13/pflag"

	"github.com/zonepath/zonepath/controllers/resizer"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "devel"

func main() {
	var cfg resizer.Config
	// --feature-gates as csi-resizer's: Kubernetes' gates, among them
	// VolumeAttributesClass (GA and locked on since 1.36, so =true is
	// accepted and =false refused; csi-resizer v2 has it on by default).
	bootstrap.SidecarMain("zonepath-resizer", version, &cfg.Sidecar,
		func(fs *flag.FlagSet) { addFlags(fs, &cfg) },
		func(ctx context.Context) error { return resizer.Run(ctx, cfg) })
}

// addFlags registers csi-resizer's own flags on fs, defaults included.
func addFlags(fs *flag.FlagSet, cfg *resizer.Config) {
	o := &cfg.Options
	fs.StringVar(&o.DriverName, "driver-name", "", "Resize only claims bound to a CSI volume of this driver (as csi-resizer decides); default: the name the plugin reports (GetPluginInfo).")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "The timeout for any RPCs to the CSI driver.")
	fs.IntVar(&o.Workers, "workers", 10, "Number of claims resized at once.")
	fs.DurationVar(&o.RetryIntervalStart, "retry-interval-start", time.Second, "Initial retry interval of a failed volume expansion; it doubles with each failure, up to --retry-interval-max.")
	fs.DurationVar(&o.RetryIntervalMax, "retry-interval-max", 5*time.Minute, "Maximum retry interval of a failed volume expansion.")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", 10*time.Minute, "Resync interval of the controller.")
	// csi-resizer tracks pods to retry drivers that expand offline only;
	// this resizer never waits for a volume to be unused, so the flag is
	// accepted for the same container arguments and changes nothing.
	fs.Bool("handle-volume-inuse-error", true, "Accepted for csi-resizer compatibility; zonepath-resizer does not track pods.")
}
