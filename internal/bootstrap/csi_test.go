package bootstrap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
)

// TestServeCSIMetrics: the metrics are served at --metrics-path only when
// an HTTP address is set.
func TestServeCSIMetrics(t *testing.T) {
	for _, addr := range []string{"", ":8080"} {
		s := &Sidecar{Flags: &standardflags.SidecarConfiguration{MetricsPath: "/custom-metrics"}, Mux: http.NewServeMux(), addr: addr}
		s.ServeCSIMetrics(metrics.NewCSIMetricsManagerForSidecar(""), "test.csi.dev")
		rec := httptest.NewRecorder()
		s.Mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/custom-metrics", nil))
		if served := rec.Code == http.StatusOK; served != (addr != "") {
			t.Errorf("address %q: /custom-metrics answered %d", addr, rec.Code)
		}
	}
}

// TestConnectCSIFails: a socket nobody serves, given up with the context,
// is an error naming the address.
func TestConnectCSIFails(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")
	s := &Sidecar{Flags: &standardflags.SidecarConfiguration{CSIAddress: sock}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.ConnectCSI(ctx); err == nil || !strings.Contains(err.Error(), "connecting to the CSI driver at "+sock) {
		t.Errorf("ConnectCSI = %v, want an error naming %s", err, sock)
	}
}
