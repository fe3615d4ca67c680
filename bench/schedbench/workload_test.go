package schedbench

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/storage/volume"
)

func TestWorkload(t *testing.T) {
	w := workload{Namespace: "ns", Phase: "r1-x", SchedulerName: "s", Class: snapshotPods, Pods: 4,
		StorageClass: "sc", Snapshots: []string{"a", "b", "c"}}
	for i, want := range []string{"a", "b", "c", "a"} {
		pod, claim := w.pod(i), w.claim(i)
		if got := claim.Spec.DataSource.Name; got != want {
			t.Errorf("claim %d restores from %s, want %s", i, got, want)
		}
		if pod.Labels[snapshotLabel] != want || claim.Labels[snapshotLabel] != want {
			t.Errorf("pod %d snapshot labels %v / %v, want %s", i, pod.Labels, claim.Labels, want)
		}
		if len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != claim.Name {
			t.Errorf("pod %d volumes %+v, want claim %s", i, pod.Spec.Volumes, claim.Name)
		}
		if pod.Spec.SchedulerName != "s" || pod.Labels[phaseLabel] != "r1-x" {
			t.Errorf("pod %d: scheduler %q, labels %v", i, pod.Spec.SchedulerName, pod.Labels)
		}
	}
	w.Class = plainPods
	if pod := w.pod(0); len(pod.Spec.Volumes) != 0 || pod.Labels[snapshotLabel] != "" {
		t.Errorf("plain pod has volumes %+v, labels %v", pod.Spec.Volumes, pod.Labels)
	}
}

// TestVolume: the binder's volume must satisfy VolumeBinding's PreBind
// check (its nodeAffinity admits the selected node) and be pre-bound to
// exactly the claim.
func TestVolume(t *testing.T) {
	claim := workload{Namespace: "ns", Phase: "p", Class: snapshotPods, StorageClass: "sc", Snapshots: []string{"a"}}.claim(0)
	claim.UID = "uid-1"
	node := labels.Set{v1.LabelTopologyRegion: "region-1", v1.LabelTopologyZone: "zone-a"}
	pv := volumeFor(claim, node)
	if err := volume.CheckNodeAffinity(pv, node); err != nil {
		t.Errorf("volume does not admit its node: %v", err)
	}
	other := labels.Set{v1.LabelTopologyRegion: "region-1", v1.LabelTopologyZone: "zone-d"}
	if volume.CheckNodeAffinity(pv, other) == nil {
		t.Error("volume admits a node of another zone")
	}
	if ref := pv.Spec.ClaimRef; ref.UID != "uid-1" || ref.Name != claim.Name || ref.Namespace != "ns" {
		t.Errorf("claimRef = %+v", ref)
	}
	if pv.Spec.StorageClassName != "sc" || pv.Spec.Capacity.Storage().String() != "1Gi" {
		t.Errorf("class %q, capacity %v", pv.Spec.StorageClassName, pv.Spec.Capacity)
	}
}
