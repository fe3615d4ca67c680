//go:build fakezones

// The tests in this file start real clusters from the binaries in
// ZONEPATH_BIN (default: the repository's bin/, after make components
// build crds); make fakezones-test runs them.
package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/objects"
	"github.com/zonepath/zonepath/fakezones/spec"
)

func binDir(t *testing.T) string {
	if d := os.Getenv("ZONEPATH_BIN"); d != "" {
		return d
	}
	d, err := filepath.Abs("../../bin")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// start brings a cluster up and registers its teardown, which must leave
// no process behind.
func start(t *testing.T, f spec.File) (*up, *State) {
	t.Helper()
	cl, err := f.Expand()
	if err != nil {
		t.Fatal(err)
	}
	bin := binDir(t)
	var out bytes.Buffer
	o := Options{WorkDir: t.TempDir(), BinDir: bin, CRDDir: filepath.Join(bin, "crds"), Cluster: cl,
		FeatureGates: "VolumeSnapshotTopology=true", Timeout: 3 * time.Minute, Out: &out}
	t0 := time.Now()
	s, err := Up(context.Background(), o)
	t.Logf("up:\n%s", out.String())
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("%d nodes ready in %.2fs", len(cl.Nodes), time.Since(t0).Seconds())
	t.Cleanup(func() { downLeavesNothing(t, s) })
	u := &up{o: o, w: &workDir{dir: o.WorkDir}, state: s}
	if err := u.connect(); err != nil {
		t.Fatal(err)
	}
	return u, s
}

func downLeavesNothing(t *testing.T, s *State) {
	var out bytes.Buffer
	if err := Down(context.Background(), s.WorkDir, &out); err != nil {
		t.Errorf("down: %v\n%s", err, out.String())
	}
	if alive := s.Running(); len(alive) > 0 {
		t.Errorf("after down %d processes still run, first %s (pid %d)", len(alive), alive[0].Name, alive[0].PID)
	}
	if left := processesUsing(s.WorkDir); len(left) > 0 {
		t.Errorf("after down these processes still use %s: %v", s.WorkDir, left)
	}
	if st, err := ReadState(s.WorkDir); err != nil || st != nil {
		t.Errorf("after down the state file is still there (%v)", err)
	}
}

// processesUsing scans /proc for any process whose command line names dir,
// which every component's does: it catches children nobody recorded.
func processesUsing(dir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(dir)) {
			found = append(found, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return found
}

func TestThreeZonesTwoNodes(t *testing.T) {
	u, _ := start(t, spec.File{Zones: 3, NodesPerZone: 2, MaxVolumesPerNode: 8,
		Nodes: []spec.NodeOverride{{Name: "node-c-2", Registration: spec.NoCSINode}}})
	ctx := context.Background()
	kube := u.clients.Kube

	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]int{}
	for _, n := range nodes.Items {
		zones[n.Labels[objects.ZoneLabel]]++
	}
	if fmt.Sprint(zones) != "map[zone-a:2 zone-b:2 zone-c:2]" {
		t.Errorf("nodes per zone = %v", zones)
	}
	for _, n := range nodes.Items {
		csiNode, err := kube.StorageV1().CSINodes().Get(ctx, n.Name, metav1.GetOptions{})
		if n.Name == "node-c-2" {
			if err == nil {
				t.Errorf("node-c-2 has a CSINode, but its registration is %s", spec.NoCSINode)
			}
			continue
		}
		if err != nil {
			t.Fatalf("CSINode %s: %v", n.Name, err)
		}
		d := csiNode.Spec.Drivers
		if len(d) != 1 || d[0].NodeID != n.Name || d[0].Allocatable == nil || *d[0].Allocatable.Count != 8 ||
			strings.Join(d[0].TopologyKeys, ",") != "topology.kubernetes.io/region,topology.kubernetes.io/zone" {
			t.Errorf("CSINode %s drivers = %+v", n.Name, d)
		}
	}

	t.Run("Immediate PVC restricted to zone-a is provisioned in zone-a", func(t *testing.T) {
		pv := provision(t, u, "zonepath-zone-a")
		terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
		if len(terms) != 1 || !strings.Contains(fmt.Sprint(terms[0]), "zone-a") || strings.Contains(fmt.Sprint(terms[0]), "zone-b") {
			t.Fatalf("PV %s nodeAffinity = %v, want zone-a only", pv.Name, terms)
		}
		t.Run("its VolumeSnapshot becomes ReadyToUse", func(t *testing.T) {
			snapshot(t, u, pv.Spec.ClaimRef.Name)
		})
	})
}

func provision(t *testing.T, u *up, class string) *v1.PersistentVolume {
	ctx := context.Background()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + class, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := u.clients.Kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pv *v1.PersistentVolume
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := u.clients.Kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil || got.Spec.VolumeName == "" || got.Status.Phase != v1.ClaimBound {
			return false, nil
		}
		pv, err = u.clients.Kube.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("PVC %s not bound: %v; provisioner log:\n%s", pvc.Name, err, tail(u, "provisioner"))
	}
	return pv
}

func snapshot(t *testing.T, u *up, pvc string) {
	ctx := context.Background()
	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotapi.Group + "/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "snap-" + pvc, "namespace": "default"},
		"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": pvc}},
	}}
	res := u.clients.Dynamic.Resource(snapshotapi.VolumeSnapshots).Namespace("default")
	if _, err := res.Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := res.Get(ctx, vs.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ready, _, _ := unstructured.NestedBool(got.Object, "status", "readyToUse")
		return ready, nil
	})
	if err != nil {
		t.Fatalf("VolumeSnapshot not ReadyToUse: %v; snapshotter log:\n%s", err, tail(u, "snapshotter"))
	}
}

func tail(u *up, component string) string {
	data, _ := os.ReadFile(u.w.log(component))
	lines := strings.Split(string(data), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// A cluster of 300 nodes must start as a whole: every node Ready and every
// node plugin registered (the figure is in the log).
func TestThreeHundredNodes(t *testing.T) {
	u, _ := start(t, spec.File{Zones: 3, NodesPerZone: 100})
	csiNodes, err := u.clients.Kube.StorageV1().CSINodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csiNodes.Items) != 300 {
		t.Fatalf("%d CSINodes, want 300", len(csiNodes.Items))
	}
}
