package kubelet

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/fakezones/objects"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// lateBy is node-b-2's registerAfter: long enough that the nodes
// registered at once are done well before it.
const lateBy = 1500 * time.Millisecond

// TestRegistersLikeKubelet runs real node plugins and checks what each
// registration mode leaves in the API.
func TestRegistersLikeKubelet(t *testing.T) {
	cl, err := spec.File{Zones: 2, NodesPerZone: 3, MaxVolumesPerNode: 7, Nodes: []spec.NodeOverride{
		{Name: "node-a-2", Registration: spec.NoDriver},
		{Name: "node-b-1", Registration: spec.NoCSINode},
		{Name: "node-b-2", Registration: spec.Late, RegisterAfter: metav1.Duration{Duration: lateBy}, MaxVolumesPerNode: ptr.To[int64](2)},
		{Name: "node-a-3", Registration: spec.OnLabel},
	}}.Expand()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	ctx, kube := runStandIn(t, cl)

	driverOf := func(ctx context.Context, node string) (found bool, id string, keys string, count int32, err error) {
		cn, err := kube.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", "", 0, err
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == "zonepath.csi.dev" {
				if d.Allocatable != nil && d.Allocatable.Count != nil {
					count = *d.Allocatable.Count
				}
				return true, d.NodeID, strings.Join(d.TopologyKeys, ","), count, nil
			}
		}
		return false, "", "", 0, nil
	}
	registered := func(node string) time.Duration {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			found, _, _, _, _ := driverOf(ctx, node)
			return found, nil
		}); err != nil {
			t.Fatalf("%s never registered: %v", node, err)
		}
		return time.Since(started)
	}
	// node-b-2 registers late: not before lateBy, and after the others;
	// then everything must be in place.
	registered("node-a-1")
	if found, _, _, _, _ := driverOf(ctx, "node-b-2"); found && time.Since(started) < lateBy {
		t.Fatal("node-b-2 registered at once, though its registration is late")
	}
	if after := registered("node-b-2"); after < lateBy {
		t.Fatalf("node-b-2 registered after %v, before its registerAfter of %v", after, lateBy)
	}
	// The others registered at once, but "at once" is goroutines on a
	// machine that may be busy: each node's state is awaited, not read once.
	for _, tc := range []struct {
		node      string
		csiNode   bool
		driver    bool
		wantCount int32
	}{
		{node: "node-a-1", csiNode: true, driver: true, wantCount: 7},
		{node: "node-a-2", csiNode: true},
		{node: "node-b-1"},
		{node: "node-b-2", csiNode: true, driver: true, wantCount: 2},
		{node: "node-a-3", csiNode: true},
	} {
		var problem string
		_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			problem = registrationProblem(ctx, kube, driverOf, tc.node, tc.csiNode, tc.driver, tc.wantCount)
			return problem == "", nil
		})
		if problem != "" {
			t.Errorf("%s: %s", tc.node, problem)
			continue
		}
		if tc.csiNode {
			expectOwnedByNode(t, kube, tc.node)
		}
	}

	// node-a-3 follows its label: registered when it is set, deregistered
	// (entry and node ID gone) when it is removed, and again.
	for _, on := range []bool{true, false, true} {
		labelRegistration(ctx, t, kube, "node-a-3", on)
		var seen string
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			found, _, _, count, err := driverOf(ctx, "node-a-3")
			node, nodeErr := kube.CoreV1().Nodes().Get(ctx, "node-a-3", metav1.GetOptions{})
			if err != nil || nodeErr != nil {
				return false, nil
			}
			_, hasID := node.Annotations[NodeIDAnnotation]
			seen = fmt.Sprintf("entry %v, count %d, node ID annotation %v", found, count, hasID)
			return found == on && hasID == on && (!on || count == 7), nil
		}); err != nil {
			t.Fatalf("node-a-3 labelled %s=%v: registration never followed (%s): %v", spec.RegisterLabel, on, seen, err)
		}
	}
}

// labelRegistration sets or removes node's spec.RegisterLabel.
func labelRegistration(ctx context.Context, t *testing.T, kube *fake.Clientset, node string, on bool) {
	t.Helper()
	value := "null"
	if on {
		value = `"true"`
	}
	patch := []byte(`{"metadata":{"labels":{"` + spec.RegisterLabel + `":` + value + `}}}`)
	if _, err := kube.CoreV1().Nodes().Patch(ctx, node, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// registrationProblem says what differs from the registration a node
// should have (none, a CSINode without the driver, or the driver with
// count), or "" when it has it.
func registrationProblem(ctx context.Context, kube *fake.Clientset,
	driverOf func(context.Context, string) (bool, string, string, int32, error),
	node string, csiNode, driver bool, wantCount int32) string {
	found, id, keys, count, err := driverOf(ctx, node)
	if !csiNode {
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("CSINode lookup = %v, want NotFound", err)
		}
		return ""
	}
	if err != nil || found != driver {
		return fmt.Sprintf("driver entry found = %v (err %v), want %v", found, err, driver)
	}
	if !driver {
		return ""
	}
	if id != node || keys != "topology.kubernetes.io/region,topology.kubernetes.io/zone" || count != wantCount {
		return fmt.Sprintf("entry = id %q keys %q count %d, want count %d", id, keys, count, wantCount)
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if n.Annotations[NodeIDAnnotation] != `{"zonepath.csi.dev":"`+node+`"}` || n.Labels["type"] != "kwok" {
		return fmt.Sprintf("annotations %v, labels %v", n.Annotations, n.Labels)
	}
	return ""
}

// runStandIn creates cl's nodes in a fake API and runs the stand-in on
// them until the test ends.
func runStandIn(t *testing.T, cl *spec.Cluster) (context.Context, *fake.Clientset) {
	t.Helper()
	data, err := yaml.Marshal(cl.DriverTopology())
	if err != nil {
		t.Fatal(err)
	}
	topo, err := world.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientset()
	for _, n := range cl.Nodes {
		if _, err := kube.CoreV1().Nodes().Create(context.Background(), objects.Node(n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Unix socket paths are short; t.TempDir() can be too long for them.
	dir, err := shortTempDir(t)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Cluster: cl, Topology: topo, Kube: kube, WorkDir: dir, DataDir: dir + "/data"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return ctx, kube
}

// TestRegistersExtraDrivers: an extra driver's node plugin runs on every
// node with the driver and registers beside zonepath's, as a second
// kubelet plugin would: its own CSINode entry and its own entry in the
// one nodeid annotation, zonepath's kept.
func TestRegistersExtraDrivers(t *testing.T) {
	const extra = "nocap.zonepath.csi.dev"
	cl, err := spec.File{Zones: 1, NodesPerZone: 2, MaxVolumesPerNode: 3,
		Nodes:        []spec.NodeOverride{{Name: "node-a-2", Registration: spec.NoDriver}},
		ExtraDrivers: []spec.ExtraDriver{{Name: extra, DisableCapabilities: []string{"SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"}}},
	}.Expand()
	if err != nil {
		t.Fatal(err)
	}
	ctx, kube := runStandIn(t, cl)
	entries := func(ctx context.Context, node string) []string {
		cn, err := kube.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		var out []string
		for _, d := range cn.Spec.Drivers {
			out = append(out, fmt.Sprintf("%s=%s/%s/%d", d.Name, d.NodeID, strings.Join(d.TopologyKeys, ","), *d.Allocatable.Count))
		}
		sort.Strings(out)
		return out
	}
	keys := "topology.kubernetes.io/region,topology.kubernetes.io/zone"
	want := []string{extra + "=node-a-1/" + keys + "/3", "zonepath.csi.dev=node-a-1/" + keys + "/3"}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return slices.Equal(entries(ctx, "node-a-1"), want), nil
	}); err != nil {
		t.Fatalf("CSINode node-a-1 drivers = %v, want %v", entries(ctx, "node-a-1"), want)
	}
	node, err := kube.CoreV1().Nodes().Get(ctx, "node-a-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := node.Annotations[NodeIDAnnotation], `{"`+extra+`":"node-a-1","zonepath.csi.dev":"node-a-1"}`; got != want {
		t.Errorf("node-a-1 %s = %s, want %s", NodeIDAnnotation, got, want)
	}
	if got := entries(ctx, "node-a-2"); len(got) != 0 {
		t.Errorf("node-a-2 has no driver, but its CSINode lists %v", got)
	}
}

// TestDriverTopology: an extra driver with terseErrors gets its own copy
// of the shared topology with the setting; the others share it as is.
func TestDriverTopology(t *testing.T) {
	shared, err := world.Parse([]byte("regions: [{name: r1, zones: [{name: a}]}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	terse := Driver{Name: "terse.dev", TerseErrors: true}.topology(shared)
	if !terse.TerseErrors || shared.TerseErrors || len(terse.Zones) != 1 {
		t.Errorf("terse driver's topology %+v, shared %+v: want terseErrors on its own copy only", terse, shared)
	}
	if got := (Driver{Name: "plain.dev"}).topology(shared); got != shared {
		t.Error("a driver without settings of its own got a copy")
	}
}

// shortTempDir is a temporary directory with a short path: unix socket
// paths are limited to 107 bytes.
func shortTempDir(t *testing.T) (string, error) {
	dir, err := os.MkdirTemp("/tmp", "kubelet-")
	if err != nil {
		return "", err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir, nil
}

// expectOwnedByNode fails unless node's CSINode is owned by its Node, as
// kubelet makes it, so that deleting the Node deletes it.
func expectOwnedByNode(t *testing.T, kube kubernetes.Interface, node string) {
	t.Helper()
	cn, err := kube.StorageV1().CSINodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: n.UID}}
	if diff := cmp.Diff(want, cn.OwnerReferences); diff != "" {
		t.Errorf("%s: CSINode owners (-want +got):\n%s", node, diff)
	}
}
