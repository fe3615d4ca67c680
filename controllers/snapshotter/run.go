package snapshotter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/config"
	"github.com/kubernetes-csi/csi-lib-utils/connection"
	"github.com/kubernetes-csi/csi-lib-utils/leaderelection"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	csirpc "github.com/kubernetes-csi/csi-lib-utils/rpc"
	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	clientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapshotscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/features"
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
// until ctx ends (or, with leader election, leadership is lost).
func Run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx)
	if cfg.Sidecar.MetricsAddress != "" && cfg.Sidecar.HttpEndpoint != "" {
		return errors.New("only one of --metrics-address and --http-endpoint can be set")
	}
	restConfig, err := config.BuildConfig(cfg.Sidecar.KubeConfig, cfg.Sidecar)
	if err != nil {
		return fmt.Errorf("building the API client configuration: %w", err)
	}
	mm := metrics.NewCSIMetricsManagerForSidecar("")
	conn, err := connection.Connect(ctx, cfg.Sidecar.CSIAddress, mm, connection.OnConnectionLoss(connection.ExitOnConnectionLoss()))
	if err != nil {
		return fmt.Errorf("connecting to the CSI driver at %s: %w", cfg.Sidecar.CSIAddress, err)
	}
	defer conn.Close()
	caps, err := probePlugin(ctx, conn, &cfg.Options)
	if err != nil {
		return err
	}
	mm.SetDriverName(cfg.Options.DriverName)
	mux, err := serveHTTP(ctx, cfg.Sidecar, mm)
	if err != nil {
		return err
	}
	ctrl, err := newFromConfig(restConfig, conn, cfg, caps)
	if err != nil {
		return err
	}
	logger.Info("Starting the snapshotter sidecar", "driver", cfg.Options.DriverName,
		"VolumeSnapshotTopology", features.Enabled(), "snapshotAccessibilityConstraints", caps.Accessibility)
	lock := leaderLockPrefix + "-" + strings.ReplaceAll(cfg.Options.DriverName, "/", "-")
	// releaseOnExit: leader election then runs under ctx, so SIGTERM
	// stops the workers and hands the lease over at once; otherwise it
	// would ignore ctx and the process would wait for SIGKILL.
	leaderelection.RunWithLeaderElection(ctx, restConfig, cfg.Sidecar, ctrl.Run, lock, mux, true)
	return nil
}

// probePlugin waits for the plugin, learns its name into o and checks
// that it can create snapshots.
func probePlugin(ctx context.Context, conn *grpc.ClientConn, o *Options) (Capabilities, error) {
	if err := csirpc.ProbeForever(ctx, conn, o.Timeout); err != nil {
		return Capabilities{}, fmt.Errorf("waiting for the CSI driver to be ready: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	name, err := csirpc.GetDriverName(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("getting the CSI driver name: %w", err)
	}
	o.DriverName = name
	caps, err := Probe(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("probing CSI driver %s: %w", name, err)
	}
	if !caps.CreateDelete {
		return Capabilities{}, fmt.Errorf("CSI driver %s does not have the controller capability CREATE_DELETE_SNAPSHOT", name)
	}
	return caps, nil
}

func newFromConfig(restConfig *rest.Config, conn *grpc.ClientConn, cfg Config, caps Capabilities) (*Controller, error) {
	// Events on snapshot objects need their types in the scheme.
	if err := snapshotscheme.AddToScheme(scheme.Scheme); err != nil {
		return nil, err
	}
	coreConfig := rest.CopyConfig(restConfig)
	coreConfig.ContentType = runtime.ContentTypeProtobuf
	kube, err := kubernetes.NewForConfig(coreConfig)
	if err != nil {
		return nil, fmt.Errorf("building the Kubernetes client: %w", err)
	}
	snapClient, err := clientset.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("building the snapshot client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("building the dynamic client: %w", err)
	}
	snap := NewSnapshotter(SnapshotterOptions{
		Conn: conn, DriverName: cfg.Options.DriverName, Client: dyn,
		Accessibility: caps.Accessibility, ExtraCreateMetadata: cfg.ExtraCreateMetadata,
	})
	return NewController(kube, snapClient, snap, cfg.Options)
}

// serveHTTP serves metrics (and, with leader election, its health check,
// which RunWithLeaderElection adds to the mux) when an address is set.
// It listens before returning, so a busy port is an error at start.
func serveHTTP(ctx context.Context, sc standardflags.SidecarConfiguration, mm metrics.CSIMetricsManager) (*http.ServeMux, error) {
	mux := http.NewServeMux()
	addr := sc.HttpEndpoint
	if addr == "" {
		addr = sc.MetricsAddress
	}
	if addr == "" {
		return mux, nil
	}
	mm.WithAdditionalRegistry(legacyregistry.DefaultGatherer)
	mm.RegisterToServer(mux, sc.MetricsPath)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving metrics: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Metrics server stopped", "address", addr)
		}
	}()
	context.AfterFunc(ctx, func() { srv.Close() })
	return mux, nil
}
