package provisioner

import (
	"context"
	"fmt"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/connection"
	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
)

// driver is the CSI driver as the provisioner found it at start.
type driver struct {
	conn       *grpc.ClientConn
	name       string
	pluginCaps rpc.PluginCapabilitySet
	ctrlCaps   rpc.ControllerCapabilitySet
	metrics    metrics.CSIMetricsManager
}

// connectDriver connects to the driver's socket, waits until it is ready
// and reads its name and capabilities, as csi-provisioner does. Losing the
// connection later exits the process (connection.ExitOnConnectionLoss):
// the driver may have restarted with other capabilities, and a restart of
// the sidecar is how every CSI sidecar picks that up.
func connectDriver(ctx context.Context, address string, timeout time.Duration) (*driver, error) {
	mm := metrics.NewCSIMetricsManagerWithOptions("",
		metrics.WithProcessStartTime(false), metrics.WithSubsystem(metrics.SubsystemSidecar))
	conn, err := connection.Connect(ctx, address, mm, connection.OnConnectionLoss(connection.ExitOnConnectionLoss()))
	if err != nil {
		return nil, fmt.Errorf("connecting to CSI driver at %s: %w", address, err)
	}
	d := &driver{conn: conn, metrics: mm}
	if err := d.probe(ctx, timeout); err != nil {
		conn.Close()
		return nil, err
	}
	mm.SetDriverName(d.name)
	return d, nil
}

// probe waits for the driver, then reads its name and capabilities, each
// call with its own timeout as upstream does.
func (d *driver) probe(ctx context.Context, timeout time.Duration) error {
	if err := rpc.ProbeForever(ctx, d.conn, timeout); err != nil {
		return fmt.Errorf("waiting for the CSI driver to be ready: %w", err)
	}
	var err error
	if d.name, err = call(ctx, timeout, d.conn, rpc.GetDriverName); err != nil {
		return fmt.Errorf("GetPluginInfo: %w", err)
	}
	if d.pluginCaps, err = call(ctx, timeout, d.conn, rpc.GetPluginCapabilities); err != nil {
		return fmt.Errorf("GetPluginCapabilities of %s: %w", d.name, err)
	}
	if d.ctrlCaps, err = call(ctx, timeout, d.conn, rpc.GetControllerCapabilities); err != nil {
		return fmt.Errorf("ControllerGetCapabilities of %s: %w", d.name, err)
	}
	return nil
}

func call[T any](ctx context.Context, timeout time.Duration, conn *grpc.ClientConn, f func(context.Context, *grpc.ClientConn) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx, conn)
}
