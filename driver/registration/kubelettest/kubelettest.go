package kubelettest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
)

// CSIHandler stands in for kubelet's CSI plugin handler
// (pkg/volume/csi.RegistrationHandler), which needs a Node API and writes
// CSINode: it accepts the versions that handler accepts (some 1.x),
// optionally calls NodeGetInfo on the endpoint as that handler does, and
// records what kubelet hands it.
type CSIHandler struct {
	// Fail makes RegisterPlugin fail, as the real handler does when
	// NodeGetInfo fails.
	Fail error
	// NodeGetInfo makes RegisterPlugin call NodeGetInfo on the endpoint
	// and fail with its error.
	NodeGetInfo bool

	mu           sync.Mutex
	registered   []string
	deregistered []string
	nodeIDs      []string
}

// ValidatePlugin implements kubelet's cache.PluginHandler.
func (h *CSIHandler) ValidatePlugin(_ context.Context, name, _ string, versions []string) error {
	if !slices.ContainsFunc(versions, func(v string) bool { return strings.HasPrefix(v, "1.") }) {
		return fmt.Errorf("plugin %s: none of the versions %v is a CSI 1.x version", name, versions)
	}
	return nil
}

// RegisterPlugin implements kubelet's cache.PluginHandler.
func (h *CSIHandler) RegisterPlugin(ctx context.Context, name, endpoint string, versions []string, _ *time.Duration) error {
	h.mu.Lock()
	h.registered = append(h.registered, fmt.Sprintf("%s %s %v", name, endpoint, versions))
	h.mu.Unlock()
	if h.Fail != nil {
		return h.Fail
	}
	if !h.NodeGetInfo {
		return nil
	}
	id, err := nodeGetInfo(ctx, endpoint)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.nodeIDs = append(h.nodeIDs, id)
	h.mu.Unlock()
	return nil
}

// DeRegisterPlugin implements kubelet's cache.PluginHandler.
func (h *CSIHandler) DeRegisterPlugin(_ context.Context, name, endpoint string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.deregistered = append(h.deregistered, name+" "+endpoint)
}

// Registered lists the RegisterPlugin calls as "name endpoint [versions]".
func (h *CSIHandler) Registered() []string { return h.list(&h.registered) }

// Deregistered lists the DeRegisterPlugin calls as "name endpoint".
func (h *CSIHandler) Deregistered() []string { return h.list(&h.deregistered) }

// NodeIDs lists the node IDs NodeGetInfo returned.
func (h *CSIHandler) NodeIDs() []string { return h.list(&h.nodeIDs) }

func (h *CSIHandler) list(l *[]string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*l)
}

func nodeGetInfo(ctx context.Context, endpoint string) (string, error) {
	conn, err := grpc.NewClient("unix://"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return "", fmt.Errorf("NodeGetInfo on %s: %w", endpoint, err)
	}
	return resp.GetNodeId(), nil
}

// Start runs kubelet's plugin manager on dir, as kubelet runs it on
// /var/lib/kubelet/plugins_registry, with h as its CSI handler, until the
// test ends.
func Start(t *testing.T, dir string, h *CSIHandler) {
	t.Helper()
	pm := pluginmanager.NewPluginManager(dir, record.NewFakeRecorder(100))
	pm.AddHandler(registerapi.CSIPlugin, h)
	ctx, cancel := context.WithCancel(context.Background())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		pm.Run(ctx, nil, stop)
	}()
	t.Cleanup(func() {
		close(stop)
		cancel()
		<-done
	})
}

// WaitFor polls cond until it holds or 20 seconds pass (kubelet's
// reconciler runs once a second).
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s", what)
	}
}
