package bootstrap

import (
	"context"
	"fmt"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/connection"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	csirpc "github.com/kubernetes-csi/csi-lib-utils/rpc"
	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"google.golang.org/grpc"
	"k8s.io/component-base/metrics/legacyregistry"
)

// CSISidecar is a Sidecar connected to its CSI driver.
type CSISidecar struct {
	*Sidecar
	// Conn is the connection to --csi-address.
	Conn *grpc.ClientConn
	// DriverName is the driver's name from GetPluginInfo.
	DriverName string
	metrics    metrics.CSIMetricsManager
}

// NewCSISidecar is NewSidecar, connected to --csi-address as the CSI
// sidecars connect: through csi-lib-utils, with a metrics manager for the
// gRPC calls, exiting the process when the connection is lost (the driver
// restarted; so does the pod's sidecar), once the driver is ready and has
// told its name (DriverName, within timeout). Close it when done.
func NewCSISidecar(ctx context.Context, flags *standardflags.SidecarConfiguration, timeout time.Duration) (*CSISidecar, error) {
	sidecar, err := NewSidecar(flags)
	if err != nil {
		return nil, err
	}
	return sidecar.connectCSI(ctx, timeout)
}

func (s *Sidecar) connectCSI(ctx context.Context, timeout time.Duration) (*CSISidecar, error) {
	c := &CSISidecar{Sidecar: s, metrics: metrics.NewCSIMetricsManagerForSidecar("")}
	var err error
	c.Conn, err = connection.Connect(ctx, s.Flags.CSIAddress, c.metrics, connection.OnConnectionLoss(connection.ExitOnConnectionLoss()))
	if err != nil {
		return nil, fmt.Errorf("connecting to the CSI driver at %s: %w", s.Flags.CSIAddress, err)
	}
	if c.DriverName, err = DriverName(ctx, c.Conn, timeout); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection to the driver.
func (s *CSISidecar) Close() error { return s.Conn.Close() }

// ServeCSIMetrics labels the CSI call metrics with the driver's name and,
// when HTTP is served, serves them with the process's own at
// --metrics-path.
func (s *CSISidecar) ServeCSIMetrics(driver string) {
	s.metrics.SetDriverName(driver)
	if s.ServesHTTP() {
		s.metrics.WithAdditionalRegistry(legacyregistry.DefaultGatherer)
		s.metrics.RegisterToServer(s.Mux, s.Flags.MetricsPath)
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
