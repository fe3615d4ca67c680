package bootstrap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/metrics"
	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
)

// TestServeCSIMetrics: the metrics are served at --metrics-path only when
// an HTTP address is set.
func TestServeCSIMetrics(t *testing.T) {
	for _, addr := range []string{"", ":8080"} {
		s := &CSISidecar{
			Sidecar: &Sidecar{Flags: &standardflags.SidecarConfiguration{MetricsPath: "/custom-metrics"}, Mux: http.NewServeMux(), addr: addr},
			metrics: metrics.NewCSIMetricsManagerForSidecar(""),
		}
		s.ServeCSIMetrics("test.csi.dev")
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
	if _, err := s.connectCSI(ctx, time.Second); err == nil || !strings.Contains(err.Error(), "connecting to the CSI driver at "+sock) {
		t.Errorf("connectCSI = %v, want an error naming %s", err, sock)
	}
}
