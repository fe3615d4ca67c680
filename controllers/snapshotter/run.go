package snapshotter

import (
	"context"
	"fmt"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	snapshotscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	upstreamfeatures "github.com/kubernetes-csi/external-snapshotter/v8/pkg/features"
	"google.golang.org/grpc"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// leaderLockPrefix is upstream csi-snapshotter's, on purpose: this
// sidecar and a csi-snapshotter for the same driver then never both lead,
// which makes replacing one with the other a safe rolling update.
const leaderLockPrefix = "external-snapshotter-leader"

// Config is everything the command line sets.
type Config struct {
	Sidecar             standardflags.SidecarConfiguration
	Options             Options // DriverName is filled from the plugin
	ExtraCreateMetadata bool
}

// Run connects to the plugin and the API server and runs the sidecar
// until ctx ends (or, with leader election, the lease is lost). The
// process plumbing (API client, HTTP, leader election) is package
// bootstrap's.
func Run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx)
	sidecar, err := bootstrap.NewCSISidecar(ctx, &cfg.Sidecar, cfg.Options.Timeout)
	if err != nil {
		return err
	}
	defer sidecar.Close()
	cfg.Options.DriverName = sidecar.DriverName
	conn := sidecar.Conn
	caps, err := probePlugin(ctx, conn, cfg.Options)
	if err != nil {
		return err
	}
	sidecar.ServeCSIMetrics(cfg.Options.DriverName)
	// As csi-snapshotter: group snapshots under upstream's gate
	// CSIVolumeGroupSnapshot (GA, on by default), here only when the
	// plugin serves them, so a driver without them needs no group RBAC.
	cfg.Options.GroupSnapshots = caps.Groups && utilfeature.DefaultFeatureGate.Enabled(upstreamfeatures.VolumeGroupSnapshot)
	ctrl, err := newFromConfig(sidecar.Clients, conn, cfg, caps)
	if err != nil {
		return err
	}
	logger.Info("Starting the snapshotter sidecar", "driver", cfg.Options.DriverName,
		"VolumeSnapshotTopology", features.Enabled(), "snapshotAccessibilityConstraints", caps.Accessibility,
		"groupSnapshots", cfg.Options.GroupSnapshots)
	sidecar.Lock = leaderLockPrefix + "-" + cfg.Options.DriverName
	return sidecar.Run(ctx, ctrl.Run)
}

// probePlugin reads the plugin's capabilities and checks that it can
// create snapshots.
func probePlugin(ctx context.Context, conn *grpc.ClientConn, o Options) (Capabilities, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	caps, err := Probe(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("probing CSI driver %s: %w", o.DriverName, err)
	}
	if !caps.CreateDelete {
		return Capabilities{}, fmt.Errorf("CSI driver %s does not have the controller capability CREATE_DELETE_SNAPSHOT", o.DriverName)
	}
	return caps, nil
}

func newFromConfig(c *bootstrap.Clients, conn *grpc.ClientConn, cfg Config, caps Capabilities) (*Controller, error) {
	// Events on snapshot objects need their types in the scheme.
	if err := snapshotscheme.AddToScheme(scheme.Scheme); err != nil {
		return nil, err
	}
	snap := NewSnapshotter(SnapshotterOptions{
		Conn: conn, DriverName: cfg.Options.DriverName, Client: c.Dynamic,
		Accessibility: caps.Accessibility, GetSnapshot: caps.GetSnapshot, ExtraCreateMetadata: cfg.ExtraCreateMetadata,
	})
	return NewController(c.Kube, c.Snapshots, snap, cfg.Options)
}
