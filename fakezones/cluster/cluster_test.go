//go:build fakezones

// The tests in this file start real clusters from the binaries in
// ZONEPATH_BIN (default: the repository's bin/, after make components
// build crds); make fakezones-test runs them.
package cluster_test

import (
	"context"
	"fmt"
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
	"github.com/zonepath/zonepath/fakezones/clustertest"
	"github.com/zonepath/zonepath/fakezones/objects"
	"github.com/zonepath/zonepath/fakezones/spec"
)

func TestThreeZonesTwoNodes(t *testing.T) {
	u := clustertest.Start(t, spec.File{Zones: 3, NodesPerZone: 2, MaxVolumesPerNode: 8,
		Nodes: []spec.NodeOverride{{Name: "node-c-2", Registration: spec.NoCSINode}}}, "")
	t.Logf("6 nodes ready in %.2fs", u.ReadyIn.Seconds())
	ctx := context.Background()
	kube := u.Kube

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

func provision(t *testing.T, u *clustertest.Cluster, class string) *v1.PersistentVolume {
	ctx := context.Background()
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + class, Namespace: "default"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := u.Kube.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pv *v1.PersistentVolume
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := u.Kube.CoreV1().PersistentVolumeClaims("default").Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil || got.Spec.VolumeName == "" || got.Status.Phase != v1.ClaimBound {
			return false, nil
		}
		pv, err = u.Kube.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("PVC %s not bound: %v; provisioner log:\n%s", pvc.Name, err, u.Log("provisioner", 20))
	}
	return pv
}

func snapshot(t *testing.T, u *clustertest.Cluster, pvc string) {
	ctx := context.Background()
	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotapi.Group + "/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "snap-" + pvc, "namespace": "default"},
		"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": pvc}},
	}}
	res := u.Dynamic.Resource(snapshotapi.VolumeSnapshots).Namespace("default")
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
		t.Fatalf("VolumeSnapshot not ReadyToUse: %v; snapshotter log:\n%s", err, u.Log("snapshotter", 20))
	}
}

// A cluster of 300 nodes must start as a whole: every node Ready and every
// node plugin registered (the figure is in the log).
func TestThreeHundredNodes(t *testing.T) {
	u := clustertest.Start(t, spec.File{Zones: 3, NodesPerZone: 100}, "")
	t.Logf("300 nodes ready in %.2fs", u.ReadyIn.Seconds())
	csiNodes, err := u.Kube.StorageV1().CSINodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csiNodes.Items) != 300 {
		t.Fatalf("%d CSINodes, want 300", len(csiNodes.Items))
	}
}
