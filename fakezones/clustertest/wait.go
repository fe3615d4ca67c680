package clustertest

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// waitFor is how long the kit waits for a controller to act: long enough
// for a loaded 2-core machine, short enough that a stuck controller fails
// the test rather than its deadline.
const waitFor = time.Minute

// poll calls done until it reports true, ignoring its errors (the object
// may not exist yet), for at most waitFor.
func poll(ctx context.Context, done func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitFor, true, done)
}

// Provision creates PVC("pvc-"+class, class, snapshot) and returns its
// PersistentVolume once the claim is Bound; the test fails with the
// provisioner's log if it is not bound in time.
func (c *Cluster) Provision(t testing.TB, class, snapshot string) *v1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	pvc := PVC("pvc-"+class, class, snapshot)
	claims := c.Kube.CoreV1().PersistentVolumeClaims(Namespace)
	if _, err := claims.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pv *v1.PersistentVolume
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		got, err := claims.Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil || got.Spec.VolumeName == "" || got.Status.Phase != v1.ClaimBound {
			return false, nil
		}
		pv, err = c.Kube.CoreV1().PersistentVolumes().Get(ctx, got.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("PVC %s not bound: %v; provisioner log:\n%s", pvc.Name, err, c.Log("provisioner", 20))
	}
	return pv
}

// Snapshot creates VolumeSnapshot("snap-"+pvc, pvc) and returns its
// VolumeSnapshotContent once the snapshot is ReadyToUse; the test fails
// with the snapshotter's log if it is not ready in time.
func (c *Cluster) Snapshot(t testing.TB, pvc string) *unstructured.Unstructured {
	t.Helper()
	return c.SnapshotOfClass(t, "snap-"+pvc, pvc, "")
}

// SnapshotOfClass is Snapshot with the snapshot's name and its
// VolumeSnapshotClass (the default class when empty).
func (c *Cluster) SnapshotOfClass(t testing.TB, name, pvc, class string) *unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	vs := VolumeSnapshot(name, pvc)
	if class != "" {
		_ = unstructured.SetNestedField(vs.Object, class, "spec", "volumeSnapshotClassName")
	}
	snapshots := c.Dynamic.Resource(snapshotapi.VolumeSnapshots).Namespace(Namespace)
	if _, err := snapshots.Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var content *unstructured.Unstructured
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		got, err := snapshots.Get(ctx, vs.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ready, _, _ := unstructured.NestedBool(got.Object, "status", "readyToUse")
		bound, _, _ := unstructured.NestedString(got.Object, "status", "boundVolumeSnapshotContentName")
		if !ready || bound == "" {
			return false, nil
		}
		content, err = c.Dynamic.Resource(snapshotapi.VolumeSnapshotContents).Get(ctx, bound, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("VolumeSnapshot %s not ReadyToUse: %v; snapshotter log:\n%s", vs.GetName(), err, c.Log("snapshotter", 20))
	}
	return content
}
