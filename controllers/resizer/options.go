package resizer

import (
	"fmt"
	"time"
)

// Options are the csi-resizer settings of the controller.
type Options struct {
	// DriverName: only claims bound to a CSI volume of this driver are
	// resized. Filled from GetPluginInfo unless --driver-name sets it.
	DriverName         string
	Timeout            time.Duration // of each CSI call
	Workers            int
	RetryIntervalStart time.Duration
	RetryIntervalMax   time.Duration
	ResyncPeriod       time.Duration
}

// Validate reports settings the controller would misbehave on.
func (o Options) Validate() error {
	switch {
	case o.DriverName == "":
		return fmt.Errorf("driver name is empty")
	case o.Workers < 1:
		return fmt.Errorf("--workers must be at least 1, not %d", o.Workers)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout must be positive, not %s", o.Timeout)
	case o.RetryIntervalStart <= 0 || o.RetryIntervalMax < o.RetryIntervalStart:
		return fmt.Errorf("--retry-interval-start must be positive and --retry-interval-max at least --retry-interval-start")
	case o.ResyncPeriod < 0:
		return fmt.Errorf("--resync-period must not be negative, not %s", o.ResyncPeriod)
	}
	return nil
}
