package bootstrap

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// identity answers Probe and GetPluginInfo as a driver named name would;
// an empty name makes GetPluginInfo fail.
type identity struct {
	csi.UnimplementedIdentityServer
	name string
}

func (i identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

func (i identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	if i.name == "" {
		return nil, status.Error(codes.Unavailable, "no name yet")
	}
	return &csi.GetPluginInfoResponse{Name: i.name, VendorVersion: "test"}, nil
}

func serveIdentity(t *testing.T, id identity) *grpc.ClientConn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "csi.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, id)
	go srv.Serve(l)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func TestDriverName(t *testing.T) {
	for _, c := range []struct {
		name, want, wantErr string
	}{
		{name: "zonepath.csi.dev", want: "zonepath.csi.dev"},
		{name: "", wantErr: "getting the CSI driver name"},
	} {
		conn := serveIdentity(t, identity{name: c.name})
		got, err := DriverName(context.Background(), conn, 5*time.Second)
		if got != c.want || (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("driver %q: DriverName = %q, %v; want %q, error containing %q", c.name, got, err, c.want, c.wantErr)
		}
	}
}
