package provisioner

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/component-base/metrics/legacyregistry"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
	libmetrics "sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller/metrics"
)

// handleMetrics serves, on mux at path, the three registries
// csi-provisioner serves: process, workqueue and leader election metrics
// (legacy registry), CSI call metrics, and the lib's provisioning
// counters. It returns the lib option that feeds the last. Package
// bootstrap serves the mux, and adds the health checks to it.
func handleMetrics(mux *http.ServeMux, path string, d *driver) func(*controller.ProvisionController) error {
	m := libmetrics.New("controller")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.PersistentVolumeClaimProvisionTotal, m.PersistentVolumeClaimProvisionFailedTotal,
		m.PersistentVolumeClaimProvisionDurationSeconds, m.PersistentVolumeDeleteTotal,
		m.PersistentVolumeDeleteFailedTotal, m.PersistentVolumeDeleteDurationSeconds)
	gatherers := prometheus.Gatherers{legacyregistry.DefaultGatherer, d.metrics.GetRegistry(), reg}
	mux.Handle(path, promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{})))
	return controller.MetricsInstance(m)
}
