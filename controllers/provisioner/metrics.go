package provisioner

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
	libmetrics "sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller/metrics"
)

// metricsAddress is --metrics-address or --http-endpoint (main rejects
// both at once, as csi-provisioner does).
func metricsAddress(s standardflags.SidecarConfiguration) string {
	if s.MetricsAddress != "" {
		return s.MetricsAddress
	}
	return s.HttpEndpoint
}

// serveMetrics serves, on mux at addr, the three registries
// csi-provisioner serves: process, workqueue and leader election metrics
// (legacy registry), CSI call metrics, and the lib's provisioning
// counters. It returns the lib option that feeds the last. The same mux
// carries the leader election health check when that is enabled.
func serveMetrics(ctx context.Context, mux *http.ServeMux, addr, path string, d *driver) func(*controller.ProvisionController) error {
	m := libmetrics.New("controller")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.PersistentVolumeClaimProvisionTotal, m.PersistentVolumeClaimProvisionFailedTotal,
		m.PersistentVolumeClaimProvisionDurationSeconds, m.PersistentVolumeDeleteTotal,
		m.PersistentVolumeDeleteFailedTotal, m.PersistentVolumeDeleteDurationSeconds)
	gatherers := prometheus.Gatherers{legacyregistry.DefaultGatherer, d.metrics.GetRegistry(), reg}
	mux.Handle(path, promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{})))
	go serve(ctx, &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second})
	return controller.MetricsInstance(m)
}

// serve runs srv until ctx ends. A port that cannot be bound is logged,
// not fatal: provisioning matters more than its metrics.
func serve(ctx context.Context, srv *http.Server) {
	logger := klog.FromContext(ctx)
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	logger.Info("Serving metrics", "address", srv.Addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error(err, "Metrics server stopped", "address", srv.Addr)
	}
}
