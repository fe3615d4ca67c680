package bootstrap

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"github.com/spf13/pflag"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// TestSidecarFlags: the sidecar flags keep csi-lib-utils' names,
// --metrics-path included, beside the logging flags.
func TestSidecarFlags(t *testing.T) {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	s := SidecarFlags(fs)
	NewCommand("x", "v1", nil).AddFlags(fs)
	args := []string{"--csi-address=/csi.sock", "--kubeconfig=/kc", "--leader-election", "--leader-election-namespace=ns",
		"--kube-api-qps=50", "--kube-api-burst=100", "--http-endpoint=:8080", "--metrics-path=/m", "--v=2", "--logging-format=json"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if s.CSIAddress != "/csi.sock" || s.KubeConfig != "/kc" || !s.LeaderElection || s.LeaderElectionNamespace != "ns" ||
		s.KubeAPIQPS != 50 || s.KubeAPIBurst != 100 || s.HttpEndpoint != ":8080" || s.MetricsPath != "/m" {
		t.Errorf("parsed %+v", *s)
	}
}

func TestHTTPAddress(t *testing.T) {
	tests := []struct {
		metrics, http, want, wantErr string
	}{
		{},
		{metrics: ":1", want: ":1"},
		{http: ":2", want: ":2"},
		{metrics: ":1", http: ":2", wantErr: "only one of --metrics-address and --http-endpoint can be set"},
	}
	for _, tc := range tests {
		got, err := HTTPAddress(&standardflags.SidecarConfiguration{MetricsAddress: tc.metrics, HttpEndpoint: tc.http})
		if wanterr.Check(t, err, tc.wantErr) {
			continue
		}
		if got != tc.want {
			t.Errorf("HTTPAddress(%q, %q) = %q, want %q", tc.metrics, tc.http, got, tc.want)
		}
	}
}

// TestServe: a taken port stops the start with an error naming it; a free
// one serves /healthz until ctx ends.
func TestServe(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		name, addr, wantErr string
	}{
		{name: "free", addr: "127.0.0.1:0"},
		{name: "taken", addr: taken.Addr().String(), wantErr: "metrics and health endpoint " + taken.Addr().String() + ": listen tcp"},
		{name: "malformed", addr: "127.0.0.1", wantErr: "metrics and health endpoint 127.0.0.1: listen tcp: address 127.0.0.1: missing port"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if wanterr.Check(t, Serve(ctx, tc.addr, http.NewServeMux()), tc.wantErr) {
				return
			}
		})
	}
}

// TestSidecarHealth: Run serves /healthz on --http-endpoint before
// running the work, and stops serving when ctx ends.
func TestSidecarHealth(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	s := Sidecar{Flags: &standardflags.SidecarConfiguration{HttpEndpoint: addr}, addr: addr}
	err = s.Run(context.Background(), func(ctx context.Context) error {
		resp, err := http.Get("http://" + addr + HealthPath)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Errorf("GET %s = %d %q, want 200 ok", HealthPath, resp.StatusCode, body)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRESTConfig(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name, flag, env, wantErr string
	}{
		{name: "flag", flag: kubeconfig},
		{name: "env", env: kubeconfig},
		{name: "flag before env", flag: kubeconfig, env: missing},
		{name: "missing file", flag: missing, wantErr: "kubeconfig " + missing + ": stat " + missing},
		{name: "nothing outside a pod", wantErr: "no --kubeconfig or $KUBECONFIG, and not in a pod"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			cfg, err := RESTConfig(tc.flag, 50, 100)
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if cfg.Host != "https://127.0.0.1:6443" || cfg.QPS != 50 || cfg.Burst != 100 {
				t.Errorf("config host %q qps %v burst %d", cfg.Host, cfg.QPS, cfg.Burst)
			}
		})
	}
}

type fakeSyncer map[reflect.Type]bool

func (f fakeSyncer) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	for _, ok := range f {
		if !ok {
			<-stop // an informer that never syncs waits for the end
		}
	}
	return f
}

func TestWaitForCacheSync(t *testing.T) {
	synced := fakeSyncer{reflect.TypeFor[int](): true}
	stuck := fakeSyncer{reflect.TypeFor[string](): false, reflect.TypeFor[bool](): true, reflect.TypeFor[float64](): false}
	tests := []struct {
		name      string
		factories []CacheSyncer
		cancelled bool
		wantErr   string
	}{
		{name: "synced", factories: []CacheSyncer{synced, synced}},
		{name: "none", factories: nil},
		{name: "stuck", factories: []CacheSyncer{synced, stuck}, wantErr: "informer caches did not sync within 10ms: float64, string"},
		{name: "stopped", factories: []CacheSyncer{stuck}, cancelled: true, wantErr: "context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			if tc.cancelled {
				cancel()
			}
			defer cancel()
			wanterr.Check(t, WaitForCacheSync(ctx, 10*time.Millisecond, tc.factories...), tc.wantErr)
		})
	}
}

// startedSyncer is a factory whose caches fill once it is started.
type startedSyncer struct{ stop <-chan struct{} }

func (s *startedSyncer) Start(stop <-chan struct{}) { s.stop = stop }

func (s *startedSyncer) WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool {
	return map[reflect.Type]bool{reflect.TypeFor[int](): s.stop != nil}
}

// TestStartInformers: the factory runs until ctx ends, and its caches
// are waited for.
func TestStartInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &startedSyncer{}
	if err := StartInformers(ctx, f); err != nil {
		t.Fatal(err)
	}
	if f.stop != ctx.Done() {
		t.Error("the informers were not started until ctx ends")
	}
}
