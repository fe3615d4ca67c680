//go:build livecluster

// The tests in this file start real clusters from the binaries in
// ZONEPATH_BIN (default: the repository's bin/, after make components
// build crds); make fakezones-test runs them.
package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/zonepath/zonepath/fakezones/cluster"
	"github.com/zonepath/zonepath/fakezones/clustertest"
	"github.com/zonepath/zonepath/fakezones/objects"
	"github.com/zonepath/zonepath/fakezones/spec"
)

func TestThreeZonesTwoNodes(t *testing.T) {
	// Each test has a cluster of its own (work dir, ports); they mostly
	// wait for the cluster, so they run side by side (go test -parallel).
	t.Parallel()
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
		pv := u.Provision(t, "zonepath-zone-a", "")
		terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
		if len(terms) != 1 || !strings.Contains(fmt.Sprint(terms[0]), "zone-a") || strings.Contains(fmt.Sprint(terms[0]), "zone-b") {
			t.Fatalf("PV %s nodeAffinity = %v, want zone-a only", pv.Name, terms)
		}
		token := writeToken(t, u, pv)
		t.Run("its VolumeSnapshot becomes ReadyToUse", func(t *testing.T) {
			u.Snapshot(t, pv.Spec.ClaimRef.Name)
		})
		t.Run("zone-a down: its zonal snapshot's restore waits; zone-a up: it completes there, and both volumes read back what was written", func(t *testing.T) {
			restoreAcrossOutage(t, u, pv, token)
		})
	})

	t.Run("zone down makes zone-b's nodes NotReady and tainted, zone up Ready again", func(t *testing.T) {
		var out strings.Builder
		if err := cluster.SetZone(ctx, u.WorkDir, "zone-b", true, &out); err != nil {
			t.Fatalf("zone down: %v\n%s", err, out.String())
		}
		for _, name := range []string{"node-b-1", "node-b-2"} {
			err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				return err == nil && slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == v1.TaintNodeNotReady }), nil
			})
			if err != nil {
				t.Errorf("node %s has no %s taint after zone down: %v", name, v1.TaintNodeNotReady, err)
			}
		}
		out.Reset()
		if err := cluster.SetZone(ctx, u.WorkDir, "zone-b", false, &out); err != nil {
			t.Fatalf("zone up: %v\n%s", err, out.String())
		}
		t.Log(out.String())
	})
}

// writeToken writes a token file into the volume's data, as a pod would,
// and returns it.
func writeToken(t *testing.T, u *clustertest.Cluster, pv *v1.PersistentVolume) string {
	t.Helper()
	token := fmt.Sprintf("token of %s at %d", pv.Name, time.Now().UnixNano())
	if err := os.WriteFile(filepath.Join(volumeData(u, pv), "token"), []byte(token), 0o644); err != nil {
		t.Fatal(err)
	}
	return token
}

// volumeData is where the fake zones' driver keeps a file-system volume's
// data (--data-dir, driver/README.md): kwok's pods do not run, so the
// test reads and writes there.
func volumeData(u *clustertest.Cluster, pv *v1.PersistentVolume) string {
	return filepath.Join(u.WorkDir, "driver", "data", "volumes", pv.Spec.CSI.VolumeHandle)
}

// expectToken fails unless the volume's data holds the token.
func expectToken(t *testing.T, u *clustertest.Cluster, pv *v1.PersistentVolume, token string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(volumeData(u, pv), "token"))
	if err != nil || string(got) != token {
		t.Errorf("volume %s (%s) token = %q, %v; want %q", pv.Name, pv.Spec.CSI.VolumeHandle, got, err, token)
	}
}

// restoreAcrossOutage takes zone-a, where pv and its only snapshot copy
// are, down; a claim restoring the snapshot stays Pending meanwhile; once
// zone-a is back the claim is bound there, and the source volume and the
// restored one read back the token (issue 23: zone up restores everything,
// no data lost).
func restoreAcrossOutage(t *testing.T, u *clustertest.Cluster, pv *v1.PersistentVolume, token string) {
	ctx := context.Background()
	var out strings.Builder
	if err := cluster.SetZone(ctx, u.WorkDir, "zone-a", true, &out); err != nil {
		t.Fatalf("zone down: %v\n%s", err, out.String())
	}
	t.Cleanup(func() { _ = cluster.SetZone(ctx, u.WorkDir, "zone-a", false, &out) })
	claims := u.Kube.CoreV1().PersistentVolumeClaims(clustertest.Namespace)
	claim := clustertest.PVC("restored-across-outage", "zonepath", "snap-"+pv.Spec.ClaimRef.Name)
	if _, err := claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Long enough for the provisioner's first attempts (it retries from
	// 1 s on), which the driver must refuse: the only copy is in zone-a.
	time.Sleep(5 * time.Second)
	if got, err := claims.Get(ctx, claim.Name, metav1.GetOptions{}); err != nil || got.Status.Phase != v1.ClaimPending {
		t.Fatalf("claim %s while zone-a is down: %v, %v; want Pending", claim.Name, got.Status.Phase, err)
	}
	if err := cluster.SetZone(ctx, u.WorkDir, "zone-a", false, &out); err != nil {
		t.Fatalf("zone up: %v\n%s", err, out.String())
	}
	var restored *v1.PersistentVolume
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := claims.Get(ctx, claim.Name, metav1.GetOptions{})
		if err != nil || got.Status.Phase != v1.ClaimBound {
			return false, nil
		}
		restored, err = u.Kube.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("claim %s not bound after zone up: %v; provisioner log:\n%s", claim.Name, err, u.Log("provisioner", 20))
	}
	if terms := fmt.Sprint(restored.Spec.NodeAffinity.Required.NodeSelectorTerms); !strings.Contains(terms, "zone-a") {
		t.Errorf("restored volume %s nodeAffinity %s, want zone-a (the snapshot's only copy)", restored.Name, terms)
	}
	expectToken(t, u, pv, token)
	expectToken(t, u, restored, token)
}

// An extra driver runs beside zonepath: registered on every node with the
// driver (its own CSINode entry and nodeid annotation entry, zonepath's
// kept), and it provisions, snapshots and restores through its own
// controller and sidecars. Without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS its
// snapshot has no nodeAffinity, so it restores in another zone.
func TestExtraDriver(t *testing.T) {
	t.Parallel() // a cluster of its own, as in TestThreeZonesTwoNodes
	const extra = "nocap.zonepath.csi.dev"
	u := clustertest.Start(t, spec.File{Zones: 2, NodesPerZone: 1, ExtraDrivers: []spec.ExtraDriver{
		{Name: extra, DisableCapabilities: []string{"SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"}}}}, "VolumeSnapshotTopology=true")
	ctx := context.Background()
	for _, node := range []string{"node-a-1", "node-b-1"} {
		csiNode, err := u.Kube.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range csiNode.Spec.Drivers {
			names = append(names, d.Name+"="+d.NodeID)
		}
		if got := strings.Join(slices.Sorted(slices.Values(names)), " "); got != extra+"="+node+" zonepath.csi.dev="+node {
			t.Errorf("CSINode %s drivers = %s, want both drivers", node, got)
		}
		n, err := u.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"%s":"%s","zonepath.csi.dev":"%s"}`, extra, node, node)
		if got := n.Annotations["csi.volume.kubernetes.io/nodeid"]; got != want {
			t.Errorf("node %s nodeid annotation = %s, want %s", node, got, want)
		}
	}
	if !strings.Contains(u.Summary(), extra) {
		t.Errorf("the summary does not name %s:\n%s", extra, u.Summary())
	}

	pv := u.Provision(t, extra+"-zone-a", "")
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != extra {
		t.Fatalf("PV %s of class %s-zone-a is not the extra driver's: %+v", pv.Name, extra, pv.Spec.CSI)
	}
	content := u.Snapshot(t, pv.Spec.ClaimRef.Name)
	if d, _, _ := unstructured.NestedString(content.Object, "spec", "driver"); d != extra {
		t.Fatalf("VolumeSnapshotContent %s driver = %q, want %s", content.GetName(), d, extra)
	}
	if a, found, _ := unstructured.NestedSlice(content.Object, "spec", "nodeAffinity"); found {
		t.Fatalf("VolumeSnapshotContent %s nodeAffinity = %v; the driver has no SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", content.GetName(), a)
	}
	// The cluster's zonal classes are all zone-a's; this one is zone-b's.
	zoneB := clustertest.ZonalStorageClass(extra+"-zone-b", extra, "zone-b")
	if _, err := u.Kube.StorageV1().StorageClasses().Create(ctx, zoneB, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := u.Provision(t, zoneB.Name, "snap-"+pv.Spec.ClaimRef.Name)
	if !strings.Contains(fmt.Sprint(restored.Spec.NodeAffinity.Required.NodeSelectorTerms), "zone-b") {
		t.Fatalf("restored PV %s nodeAffinity = %v, want zone-b", restored.Name, restored.Spec.NodeAffinity.Required.NodeSelectorTerms)
	}
}

// A cluster of 300 nodes must start as a whole: every node Ready and every
// node plugin registered (the figure is in the log).
func TestThreeHundredNodes(t *testing.T) {
	t.Parallel() // a cluster of its own, as in TestThreeZonesTwoNodes
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
