package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/klog/v2"
)

const (
	// HealthPath answers ok while the process works, and fails when it
	// holds a lease it has not renewed in time.
	HealthPath = "/healthz"
	// LeaderHealthPath is csi-lib-utils' path of the lease check alone.
	LeaderHealthPath = "/healthz/leader-election"
)

// Serve serves mux on addr until ctx ends. It listens before returning,
// so that a port it cannot bind stops the start with an error naming it,
// instead of a log line nobody reads and no metrics.
func Serve(ctx context.Context, addr string, mux *http.ServeMux) error {
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics and health endpoint %s: %w", addr, err)
	}
	logger := klog.FromContext(ctx)
	logger.Info("Serving metrics and health", "address", lis.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "Metrics and health endpoint stopped", "address", addr)
		}
	}()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}
