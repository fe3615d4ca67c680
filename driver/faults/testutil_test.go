package faults

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

const (
	createSnapshot = "/csi.v1.Controller/CreateSnapshot"
	deleteSnapshot = "/csi.v1.Controller/DeleteSnapshot"
	listSnapshots  = "/csi.v1.Controller/ListSnapshots"
	listVolumes    = "/csi.v1.Controller/ListVolumes"
	createVolume   = "/csi.v1.Controller/CreateVolume"
	deleteVolume   = "/csi.v1.Controller/DeleteVolume"
	nodeStage      = "/csi.v1.Node/NodeStageVolume"
	nodeGetInfo    = "/csi.v1.Node/NodeGetInfo"
	ctrlGetCaps    = "/csi.v1.Controller/ControllerGetCapabilities"
)

// fakeHandler records calls and returns a fixed reply.
type fakeHandler struct {
	calls atomic.Int32
	resp  any
	err   error
}

func (f *fakeHandler) handle(context.Context, any) (any, error) {
	f.calls.Add(1)
	return f.resp, f.err
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newInjector writes content to a temporary fault file and loads it.
func newInjector(t *testing.T, content string, node map[string]string) (*Injector, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "faults.yaml")
	writeFile(t, path, content)
	i, err := New(path, node)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return i, path
}

func call(ctx context.Context, i *Injector, method string, req any, h *fakeHandler) (any, error) {
	return i.UnaryInterceptor()(ctx, req, &grpc.UnaryServerInfo{FullMethod: method}, h.handle)
}

// logContext returns a context whose logger records V(2) output, and a
// function returning everything logged so far.
func logContext(t *testing.T) (context.Context, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2), ktesting.BufferLogs(true)))
	buf := logger.GetSink().(ktesting.Underlier).GetBuffer()
	return klog.NewContext(context.Background(), logger), buf.String
}

// loadOnly loads data as the injector's only fault file, for tests that
// need no file on disk.
func (i *Injector) loadOnly(data []byte) error {
	if len(i.files) == 0 {
		i.files = []*source{{path: "test"}}
	}
	return i.load(i.files[0], data)
}
