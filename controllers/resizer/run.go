package resizer

import (
	"context"
	"fmt"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/internal/bootstrap"
)

// leaderLockPrefix is upstream csi-resizer's, on purpose: this resizer and
// a csi-resizer for the same driver never both lead, so swapping one
// image for the other is a safe rolling update.
const leaderLockPrefix = "external-resizer"

// Config is everything the command line sets.
type Config struct {
	Sidecar standardflags.SidecarConfiguration
	Options Options // DriverName: --driver-name, else the plugin's
}

// Run connects to the plugin and the API server and runs the resizer
// until ctx ends (or, with leader election, the lease is lost).
func Run(ctx context.Context, cfg Config) error {
	sidecar, err := bootstrap.NewSidecar(&cfg.Sidecar)
	if err != nil {
		return err
	}
	conn, mm, err := sidecar.ConnectCSI(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	caps, err := probePlugin(ctx, conn, &cfg.Options)
	if err != nil {
		return err
	}
	sidecar.ServeCSIMetrics(mm, cfg.Options.DriverName)
	ctrl, err := NewController(sidecar.Clients.Kube, NewExpander(conn, caps), cfg.Options)
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Starting the resizer", "driver", cfg.Options.DriverName,
		"controllerExpansion", caps.Controller, "nodeOnlyExpansion", caps.Node)
	sidecar.Lock = leaderLockPrefix + "-" + cfg.Options.DriverName
	return sidecar.Run(ctx, ctrl.Run)
}

// probePlugin waits for the plugin, learns its name into o unless set,
// and checks that it can expand volumes at all.
func probePlugin(ctx context.Context, conn *grpc.ClientConn, o *Options) (Capabilities, error) {
	name, err := bootstrap.DriverName(ctx, conn, o.Timeout)
	if err != nil {
		return Capabilities{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if o.DriverName == "" {
		o.DriverName = name
	}
	caps, err := Probe(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("probing CSI driver %s: %w", name, err)
	}
	if !caps.Controller && !caps.Node {
		return Capabilities{}, fmt.Errorf("CSI driver %s has neither the controller capability EXPAND_VOLUME nor the plugin capability VolumeExpansion", name)
	}
	return caps, nil
}
