//go:build fakezones

// Package integration runs zonepath's KEP-5943 controllers - the
// snapshotter sidecar, the provisioner and the SnapshotTopology scheduler
// plugin - together with a real etcd and kube-apiserver, the upstream
// snapshot-controller and the zonepath driver, in a fake-zones cluster
// (fakezones/cluster). make fakezones-test and make conformance run it,
// after make components build.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
	"github.com/zonepath/zonepath/fakezones/clustertest"
	"github.com/zonepath/zonepath/fakezones/spec"
)

const (
	ns         = "default"
	zoneKey    = "topology.kubernetes.io/zone"
	regionKey  = "topology.kubernetes.io/region"
	timeout    = time.Minute
	pollPeriod = 100 * time.Millisecond
)

type env struct {
	*clustertest.Cluster
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// setUp starts a 3-zone cluster running zonepath's own scheduler,
// snapshotter and provisioner with the given feature gates.
func setUp(t *testing.T, gates string) *env {
	bin := clustertest.BinDir(t)
	for _, b := range []string{"zonepath-scheduler", "zonepath-snapshotter", "zonepath-provisioner"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Fatalf("%s is not built (make build): %v", b, err)
		}
	}
	c := clustertest.Start(t, spec.File{Zones: 3, NodesPerZone: 2}, gates)
	t.Cleanup(func() {
		if t.Failed() {
			for _, name := range []string{"scheduler", "provisioner", "snapshotter"} {
				t.Logf("%s log:\n%s", name, c.Log(name, 30))
			}
		}
	})
	return &env{Cluster: c, kube: c.Kube, dyn: c.Dynamic}
}

func zones(z ...string) []v1.TopologySelectorTerm {
	return []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
		{Key: zoneKey, Values: z}}}}
}

func TestSnapshotTopologyEndToEnd(t *testing.T) {
	e := setUp(t, "VolumeSnapshotTopology=true")

	// A volume in zone-a and a snapshot of it through the zone-a class:
	// the sidecar sends the class's allowedTopologies and writes the
	// driver's answer to the content.
	e.pvc(t, "source", "zonepath-zone-a", nil)
	e.waitBound(t, "source")
	content := e.snapshot(t, "snap-a", "source", "zonepath-zone-a")
	affinity, err := snapshotapi.NodeAffinity(content)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
		{Key: regionKey, Values: []string{"region-1"}}, {Key: zoneKey, Values: []string{"zone-a"}}}}}
	if !topology.Matches(affinity, map[string]string{regionKey: "region-1", zoneKey: "zone-a"}) ||
		topology.Matches(affinity, map[string]string{regionKey: "region-1", zoneKey: "zone-b"}) {
		t.Fatalf("content %s nodeAffinity = %v, want %v", content.GetName(), affinity, want)
	}

	t.Run("an Immediate restore is provisioned inside the intersection", func(t *testing.T) {
		// The class allows every zone; only the snapshot's nodeAffinity
		// can put the volume in zone-a.
		e.pvc(t, "restore", "zonepath", snapshotSource("snap-a"))
		pv := e.waitBound(t, "restore")
		if got := fmt.Sprint(pv.Spec.NodeAffinity.Required.NodeSelectorTerms); !strings.Contains(got, "zone-a") || strings.Contains(got, "zone-b") || strings.Contains(got, "zone-c") {
			t.Fatalf("restored PV %s is accessible from %s, want zone-a only", pv.Name, got)
		}
	})

	t.Run("an impossible StorageClass gets a Warning event naming both", func(t *testing.T) {
		e.class(t, "zonepath-zone-b-only", storagev1.VolumeBindingImmediate, zones("zone-b"))
		e.pvc(t, "impossible", "zonepath-zone-b-only", snapshotSource("snap-a"))
		ev := e.waitEvent(t, "impossible", func(ev v1.Event) bool {
			return ev.Type == v1.EventTypeWarning && strings.Contains(ev.Message, content.GetName()) &&
				strings.Contains(ev.Message, "zonepath-zone-b-only")
		})
		t.Logf("event %s: %s", ev.Reason, ev.Message)
	})

	t.Run("a WaitForFirstConsumer restore's pod lands inside the snapshot's zone", func(t *testing.T) {
		// Nodes exist in zone-a, zone-b and zone-c; only zone-a has the
		// snapshot, and nothing but the plugin tells the scheduler so.
		e.pvc(t, "wffc-a", "zonepath-wffc", snapshotSource("snap-a"))
		e.pod(t, "anywhere", "wffc-a", nil)
		if node := e.waitScheduled(t, "anywhere"); !strings.HasPrefix(node, "node-a-") {
			t.Fatalf("scheduled to %s, want a zone-a node", node)
		}
		e.waitBound(t, "wffc-a")
	})

	t.Run("the scheduler plugin rejects nodes outside the snapshot and requeues when it widens", func(t *testing.T) {
		// A region-wide snapshot, narrowed by an admin to zone-a: the
		// field is mutable for exactly this.
		regional := e.snapshot(t, "snap-region", "source", "zonepath-region")
		e.patchAffinity(t, regional.GetName(), zones("zone-a"))
		e.pvc(t, "wffc", "zonepath-wffc", snapshotSource("snap-region"))
		e.pod(t, "in-zone-b", "wffc", map[string]string{zoneKey: "zone-b"})
		ev := e.waitEvent(t, "in-zone-b", func(ev v1.Event) bool {
			return ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, "snap-region")
		})
		t.Logf("while narrowed: %s", ev.Message)

		widened := time.Now()
		e.patchAffinity(t, regional.GetName(), zones("zone-a", "zone-b"))
		node := e.waitScheduled(t, "in-zone-b")
		t.Logf("scheduled to %s %.1fs after the content was widened", node, time.Since(widened).Seconds())
		if !strings.HasPrefix(node, "node-b-") {
			t.Fatalf("scheduled to %s, want a zone-b node", node)
		}
	})
}

// With the gate off nothing writes nodeAffinity and nothing enforces one
// an admin wrote, which stays as it was.
func TestGateOff(t *testing.T) {
	e := setUp(t, "VolumeSnapshotTopology=false")
	e.pvc(t, "source", "zonepath-zone-a", nil)
	e.waitBound(t, "source")
	content := e.snapshot(t, "snap-a", "source", "zonepath-zone-a")
	if affinity, err := snapshotapi.NodeAffinity(content); err != nil || affinity != nil {
		t.Fatalf("gate off, content %s got nodeAffinity %v (%v)", content.GetName(), affinity, err)
	}

	// A region-wide snapshot an admin restricted to zone-a.
	regional := e.snapshot(t, "snap-region", "source", "zonepath-region")
	narrowed := zones("zone-a")
	e.patchAffinity(t, regional.GetName(), narrowed)

	t.Run("the provisioner does not intersect", func(t *testing.T) {
		e.class(t, "zonepath-zone-b-only", storagev1.VolumeBindingImmediate, zones("zone-b"))
		e.pvc(t, "restore", "zonepath-zone-b-only", snapshotSource("snap-region"))
		pv := e.waitBound(t, "restore")
		if got := fmt.Sprint(pv.Spec.NodeAffinity.Required.NodeSelectorTerms); !strings.Contains(got, "zone-b") {
			t.Fatalf("restored PV %s is in %s, want zone-b: the class alone decides", pv.Name, got)
		}
	})
	t.Run("the scheduler does not filter", func(t *testing.T) {
		e.pvc(t, "wffc", "zonepath-wffc", snapshotSource("snap-region"))
		e.pod(t, "in-zone-b", "wffc", map[string]string{zoneKey: "zone-b"})
		if node := e.waitScheduled(t, "in-zone-b"); !strings.HasPrefix(node, "node-b-") {
			t.Fatalf("scheduled to %s, want a zone-b node", node)
		}
	})
	t.Run("the admin's nodeAffinity is untouched", func(t *testing.T) {
		got, err := e.dyn.Resource(snapshotapi.VolumeSnapshotContents).Get(context.Background(), regional.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		affinity, err := snapshotapi.NodeAffinity(got)
		if err != nil || fmt.Sprint(affinity) != fmt.Sprint(narrowed) {
			t.Fatalf("nodeAffinity = %v (%v), want %v", affinity, err, narrowed)
		}
	})
}

func snapshotSource(name string) *v1.TypedLocalObjectReference {
	return &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: name}
}

func (e *env) pvc(t *testing.T, name, class string, source *v1.TypedLocalObjectReference) {
	t.Helper()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			DataSource:       source,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) class(t *testing.T, name string, mode storagev1.VolumeBindingMode, allowed []v1.TopologySelectorTerm) {
	t.Helper()
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "zonepath.csi.dev",
		VolumeBindingMode: ptr.To(mode), AllowedTopologies: allowed}
	if _, err := e.kube.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) pod(t *testing.T, name, claim string, selector map[string]string) {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			NodeSelector: selector,
			Containers:   []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if _, err := e.kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), pollPeriod, timeout, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (e *env) waitBound(t *testing.T, name string) *v1.PersistentVolume {
	t.Helper()
	var pv *v1.PersistentVolume
	e.poll(t, "PVC "+name+" bound", func(ctx context.Context) (bool, error) {
		pvc, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pvc.Status.Phase != v1.ClaimBound {
			return false, nil
		}
		pv, err = e.kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, nil
	})
	return pv
}

// snapshot creates a VolumeSnapshot and returns its content once ready.
func (e *env) snapshot(t *testing.T, name, pvc, class string) *unstructured.Unstructured {
	t.Helper()
	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotapi.Group + "/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"volumeSnapshotClassName": class, "source": map[string]any{"persistentVolumeClaimName": pvc}},
	}}
	snaps := e.dyn.Resource(snapshotapi.VolumeSnapshots).Namespace(ns)
	if _, err := snaps.Create(context.Background(), vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var content *unstructured.Unstructured
	e.poll(t, "VolumeSnapshot "+name+" ReadyToUse", func(ctx context.Context) (bool, error) {
		got, err := snaps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ready, _, _ := unstructured.NestedBool(got.Object, "status", "readyToUse")
		bound, _, _ := unstructured.NestedString(got.Object, "status", "boundVolumeSnapshotContentName")
		if !ready || bound == "" {
			return false, nil
		}
		content, err = e.dyn.Resource(snapshotapi.VolumeSnapshotContents).Get(ctx, bound, metav1.GetOptions{})
		return err == nil, nil
	})
	return content
}

func (e *env) patchAffinity(t *testing.T, content string, terms []v1.TopologySelectorTerm) {
	t.Helper()
	patch, err := snapshotapi.NodeAffinityPatch(terms)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dyn.Resource(snapshotapi.VolumeSnapshotContents).Patch(context.Background(), content, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching %s nodeAffinity: %v", content, err)
	}
}

func (e *env) waitEvent(t *testing.T, object string, match func(v1.Event) bool) v1.Event {
	t.Helper()
	var found v1.Event
	e.poll(t, "an event on "+object, func(ctx context.Context) (bool, error) {
		events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
		if err != nil {
			return false, nil
		}
		for _, ev := range events.Items {
			if match(ev) {
				found = ev
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func (e *env) waitScheduled(t *testing.T, name string) string {
	t.Helper()
	var node string
	e.poll(t, "pod "+name+" scheduled", func(ctx context.Context) (bool, error) {
		pod, err := e.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		node = pod.Spec.NodeName
		return node != "", nil
	})
	return node
}
