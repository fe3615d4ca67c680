package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

func TestControllerSocket(t *testing.T) {
	dir := t.TempDir()
	state := `{"controllerSocket": "/w/csi/controller.sock", "processes": [],
  "extraDrivers": [{"name": "nocap.zonepath.csi.dev", "controllerSocket": "/w/csi/extra1/controller.sock"}]}`
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	for driver, want := range map[string]string{
		defaultDriverName:        "/w/csi/controller.sock",
		"nocap.zonepath.csi.dev": "/w/csi/extra1/controller.sock",
	} {
		if got, err := controllerSocket(dir, driver); err != nil || got != want {
			t.Errorf("controllerSocket(%s) = %q, %v; want %q", driver, got, err, want)
		}
	}
	if _, err := controllerSocket(dir, "other.csi.dev"); err == nil || !strings.Contains(err.Error(), "no driver other.csi.dev") {
		t.Errorf("unknown driver: err = %v", err)
	}
	if _, err := controllerSocket(t.TempDir(), defaultDriverName); err == nil {
		t.Error("no cluster.json: no error")
	}
}

func TestFirstSegment(t *testing.T) {
	dir := t.TempDir()
	with := filepath.Join(dir, "with.yaml")
	without := filepath.Join(dir, "without.yaml")
	for path, content := range map[string]string{
		with:    "segments:\n- {zone: b, region: r1}\n- {zone: c, region: r1}\nexhaustAfter: 2\n",
		without: "attachLimit: 4\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if seg, err := firstSegment(with); err != nil || seg["zone"] != "b" || seg["region"] != "r1" || len(seg) != 2 {
		t.Errorf("firstSegment = %v, %v", seg, err)
	}
	if seg, err := firstSegment(without); err != nil || seg != nil {
		t.Errorf("no segments: %v, %v; want nil", seg, err)
	}
}

// nodePlugin serves NodeGetInfo with a segment on sock.
type nodePlugin struct {
	csi.UnimplementedNodeServer
	segment map[string]string
}

func (n nodePlugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: "n", AccessibleTopology: &csi.Topology{Segments: n.segment}}, nil
}

func serveNode(t *testing.T, sock string, segment map[string]string) {
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	csi.RegisterNodeServer(s, nodePlugin{segment: segment})
	go s.Serve(l)
	t.Cleanup(s.Stop)
}

// The node plugin is chosen by what it reports, not by its name: the
// cluster's node names need not say their zone.
func TestNodeSocketIn(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "nodes"), 0o755); err != nil {
		t.Fatal(err)
	}
	sock := func(n string) string { return filepath.Join(dir, "nodes", n+".sock") }
	serveNode(t, sock("n1"), map[string]string{"vendor/zone": "a", "vendor/rack": "r1"})
	serveNode(t, sock("n2"), map[string]string{"vendor/zone": "b", "vendor/rack": "r1"})
	serveNode(t, sock("n3"), map[string]string{"vendor/zone": "b", "vendor/rack": "r2"})
	controller := filepath.Join(dir, "controller.sock")
	ctx := context.Background()
	tests := []struct {
		segment map[string]string
		want    string
	}{
		{map[string]string{"vendor/zone": "b"}, sock("n2")},
		{map[string]string{"vendor/zone": "b", "vendor/rack": "r2"}, sock("n3")},
		{nil, sock("n1")},
		{map[string]string{"vendor/zone": "c"}, ""},
		{map[string]string{"topology.kubernetes.io/zone": "a"}, ""},
	}
	for _, tt := range tests {
		got, err := nodeSocketIn(ctx, controller, tt.segment)
		if got != tt.want || (tt.want == "") != (err != nil) {
			t.Errorf("nodeSocketIn(%v) = %q, %v; want %q", tt.segment, got, err, tt.want)
		}
	}
	if _, err := nodeSocketIn(ctx, filepath.Join(t.TempDir(), "controller.sock"), nil); err == nil {
		t.Error("no node sockets: no error")
	}
}
