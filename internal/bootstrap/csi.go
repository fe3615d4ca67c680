package bootstrap

import (
	"context"
	"fmt"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/connection"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	csirpc "github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	"k8s.io/component-base/metrics/legacyregistry"
)

// ConnectCSI connects to --csi-address as the CSI sidecars do: through
// csi-lib-utils, with a metrics manager for the gRPC calls, and exiting
// the process when the connection is lost (the driver restarted; so does
// the pod's sidecar). Close the connection when done.
func (s *Sidecar) ConnectCSI(ctx context.Context) (*grpc.ClientConn, metrics.CSIMetricsManager, error) {
	mm := metrics.NewCSIMetricsManagerForSidecar("")
	conn, err := connection.Connect(ctx, s.Flags.CSIAddress, mm, connection.OnConnectionLoss(connection.ExitOnConnectionLoss()))
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the CSI driver at %s: %w", s.Flags.CSIAddress, err)
	}
	return conn, mm, nil
}

// ServeCSIMetrics labels mm's metrics with the driver's name and, when
// HTTP is served, serves them with the process's own at --metrics-path.
func (s *Sidecar) ServeCSIMetrics(mm metrics.CSIMetricsManager, driver string) {
	mm.SetDriverName(driver)
	if s.ServesHTTP() {
		mm.WithAdditionalRegistry(legacyregistry.DefaultGatherer)
		mm.RegisterToServer(s.Mux, s.Flags.MetricsPath)
	}
}

// DriverName waits until the CSI driver on conn is ready (Probe, retried
// as the sidecars do while the driver starts) and returns its name from
// GetPluginInfo, the one call within timeout.
func DriverName(ctx context.Context, conn *grpc.ClientConn, timeout time.Duration) (string, error) {
	if err := csirpc.ProbeForever(ctx, conn, timeout); err != nil {
		return "", fmt.Errorf("waiting for the CSI driver to be ready: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name, err := csirpc.GetDriverName(ctx, conn)
	if err != nil {
		return "", fmt.Errorf("getting the CSI driver name: %w", err)
	}
	return name, nil
}
