package nulldriver

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// TestServe: the driver answers on its socket until the context ends,
// and an endpoint that is not a unix socket is refused.
func TestServe(t *testing.T) {
	if err := New(1, 1, 100).Serve(context.Background(), "tcp://127.0.0.1:0"); err == nil {
		t.Error("Serve accepted a tcp endpoint")
	}
	endpoint := "unix://" + filepath.Join(t.TempDir(), "csi.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- New(1, 1, 100).Serve(ctx, endpoint) }()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	call, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(call, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	if err != nil || info.GetName() != "nulldriver.zonepath.csi.dev" {
		t.Fatalf("GetPluginInfo = %v, %v", info, err)
	}
	cancel()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return once its context ended")
	}
}
