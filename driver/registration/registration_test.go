package registration

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/registration/kubelettest"
	"github.com/zonepath/zonepath/internal/wanterr"
)

func TestValidate(t *testing.T) {
	long := "/" + strings.Repeat("d", maxSocketPath)
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "kubelet's default layout", cfg: Config{DriverName: "zonepath.csi.dev",
			Endpoint: "/var/lib/kubelet/plugins/zonepath.csi.dev/csi.sock", Dir: DefaultDir}},
		{name: "no endpoint", cfg: Config{DriverName: "zonepath.csi.dev", Dir: DefaultDir},
			wantErr: "--kubelet-registration-path: the CSI socket's path on the host is required"},
		{name: "endpoint as URL", cfg: Config{DriverName: "zonepath.csi.dev", Endpoint: "unix:///csi/csi.sock", Dir: DefaultDir},
			wantErr: `--kubelet-registration-path: the CSI socket's path on the host "unix:///csi/csi.sock" is not an absolute path (give a path, not a unix:// URL)`},
		{name: "relative endpoint", cfg: Config{DriverName: "zonepath.csi.dev", Endpoint: "csi.sock", Dir: DefaultDir},
			wantErr: "--kubelet-registration-path: the CSI socket's path on the host \"csi.sock\" is not an absolute path"},
		{name: "endpoint too long", cfg: Config{DriverName: "zonepath.csi.dev", Endpoint: long, Dir: DefaultDir},
			wantErr: "--kubelet-registration-path: the CSI socket's path on the host /ddd"},
		{name: "relative dir", cfg: Config{DriverName: "zonepath.csi.dev", Endpoint: "/csi.sock", Dir: "registration"},
			wantErr: `--plugin-registration-path: "registration" is not an absolute path`},
		{name: "empty dir", cfg: Config{DriverName: "zonepath.csi.dev", Endpoint: "/csi.sock"},
			wantErr: `--plugin-registration-path: "" is not an absolute path`},
		{name: "dir too long for the socket", cfg: Config{DriverName: "zonepath.csi.dev", Endpoint: "/csi.sock", Dir: "/" + strings.Repeat("r", 90)},
			wantErr: "--plugin-registration-path: the registration socket /rrr"},
		{name: "no driver name", cfg: Config{Endpoint: "/csi.sock", Dir: DefaultDir}, wantErr: "needs the driver's name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if strings.Contains(tc.name, "too long") && !strings.Contains(err.Error(), "a unix socket path can have") {
				t.Errorf("Validate() = %v, want the unix socket limit named", err)
			}
		})
	}
}

func TestSocketPath(t *testing.T) {
	got := Config{DriverName: "zonepath.csi.dev", Dir: "/var/lib/kubelet/plugins_registry"}.SocketPath()
	if want := "/var/lib/kubelet/plugins_registry/zonepath.csi.dev-reg.sock"; got != want {
		t.Errorf("SocketPath() = %s, want %s (node-driver-registrar's name)", got, want)
	}
}

// TestServeLeftovers: a socket an earlier run left is replaced, anything
// else at the path stops Serve with an error naming the flag, and the
// socket is gone after Serve returns.
func TestServeLeftovers(t *testing.T) {
	tests := []struct {
		name    string
		leave   func(t *testing.T, path string)
		wantErr string
	}{
		{name: "nothing there", leave: func(*testing.T, string) {}},
		{name: "stale socket", leave: func(t *testing.T, path string) {
			lis, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			// Keep the file, as a killed process does.
			lis.(*net.UnixListener).SetUnlinkOnClose(false)
			lis.Close()
		}},
		{name: "regular file", leave: func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, wantErr: "--plugin-registration-path: " + "%s exists and is not a socket"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{DriverName: "zonepath.csi.dev", Endpoint: "/csi.sock", Dir: drivertest.ShortTempDir(t)}
			tc.leave(t, cfg.SocketPath())
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Serve(ctx) }()
			if tc.wantErr != "" {
				want := strings.Replace(tc.wantErr, "%s", cfg.SocketPath(), 1)
				if err := <-done; err == nil || err.Error() != want {
					t.Fatalf("Serve() = %v, want %q", err, want)
				}
				cancel()
				return
			}
			kubelettest.WaitFor(t, "the registration socket", func() bool { return isSocket(cfg.SocketPath()) })
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("Serve() = %v after cancel, want nil", err)
			}
			if _, err := os.Lstat(cfg.SocketPath()); !os.IsNotExist(err) {
				t.Errorf("socket still there after Serve returned: %v", err)
			}
		})
	}
}

func isSocket(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
