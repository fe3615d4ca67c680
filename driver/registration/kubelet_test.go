package registration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/registration/kubelettest"
)

// TestKubeletRegistersPlugin drives the Registration service with
// kubelet's plugin manager: kubelet must find the socket, reach the CSI
// handler's RegisterPlugin with the driver's name, the host path of its
// CSI socket and version 1.0.0, and deregister it when the socket goes.
func TestKubeletRegistersPlugin(t *testing.T) {
	const endpoint = "/var/lib/kubelet/plugins/zonepath.csi.dev/csi.sock"
	tests := []struct {
		name   string
		driver string
	}{
		{name: "default name", driver: "zonepath.csi.dev"},
		{name: "second instance", driver: "nocap.zonepath.csi.dev"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := drivertest.ShortTempDir(t)
			h := &kubelettest.CSIHandler{}
			kubelettest.Start(t, dir, h)
			s, err := New(Config{DriverName: tc.driver, Endpoint: endpoint, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- s.Serve(ctx) }()

			kubelettest.WaitFor(t, "kubelet to report the registration", s.Registered)
			want := fmt.Sprintf("%s %s [1.0.0]", tc.driver, endpoint)
			if got := h.Registered(); len(got) != 1 || got[0] != want {
				t.Fatalf("kubelet's CSI handler got RegisterPlugin %q, want once %q", got, want)
			}

			cancel()
			if err := <-served; err != nil {
				t.Fatalf("Serve() = %v after cancel, want nil", err)
			}
			kubelettest.WaitFor(t, "kubelet to call DeRegisterPlugin", func() bool { return len(h.Deregistered()) > 0 })
			if got := h.Deregistered(); got[0] != tc.driver+" "+endpoint {
				t.Errorf("DeRegisterPlugin(%q), want %q", got[0], tc.driver+" "+endpoint)
			}
		})
	}
}

// TestKubeletRejectsPlugin: when kubelet's handler fails, kubelet reports
// PluginRegistered=false and Serve returns kubelet's error, so the driver
// exits and its pod restarts, as with node-driver-registrar.
func TestKubeletRejectsPlugin(t *testing.T) {
	dir := drivertest.ShortTempDir(t)
	kubelettest.Start(t, dir, &kubelettest.CSIHandler{Fail: errors.New("NodeGetInfo: connection refused")})
	s, err := New(Config{DriverName: "zonepath.csi.dev", Endpoint: "/csi/csi.sock", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background()) }()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "kubelet did not register driver zonepath.csi.dev (endpoint /csi/csi.sock)") ||
			!strings.Contains(err.Error(), "NodeGetInfo: connection refused") {
			t.Fatalf("Serve() = %v, want kubelet's error about the driver", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after kubelet rejected the plugin")
	}
	if s.Registered() {
		t.Error("Registered() = true after kubelet rejected the plugin")
	}
	if isSocket(s.cfg.SocketPath()) {
		t.Error("registration socket left behind after the rejection")
	}
}
