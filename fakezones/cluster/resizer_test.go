//go:build livecluster

package cluster_test

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/zonepath/zonepath/fakezones/clustertest"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// TestResizer: zonepath-resizer, as deploy/rbac's zonepath-controller,
// expands a claim whose request grows: kube-controller-manager names the
// driver on the claim, ControllerExpandVolume grows the volume and its
// PersistentVolume's capacity follows. kwok nodes have no kubelet to grow
// the file system, so the claim then waits for the node
// (NodeResizePending, FileSystemResizePending), as it would until a pod
// uses it.
func TestResizer(t *testing.T) {
	t.Parallel() // a cluster of its own, as in TestThreeZonesTwoNodes
	u := clustertest.StartRBAC(t, spec.File{Zones: 1, NodesPerZone: 1}, "", "../../deploy/rbac")
	pv := u.Provision(t, "zonepath-zone-a", "")
	ctx := context.Background()
	claims := u.Kube.CoreV1().PersistentVolumeClaims(clustertest.Namespace)
	name := pv.Spec.ClaimRef.Name
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"3Gi"}}}}`)
	if _, err := claims.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := resource.MustParse("3Gi")
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := u.Kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pvc, err := claims.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		capacity, allocated := got.Spec.Capacity[v1.ResourceStorage], pvc.Status.AllocatedResources[v1.ResourceStorage]
		st := pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage]
		pending := slices.ContainsFunc(pvc.Status.Conditions, func(c v1.PersistentVolumeClaimCondition) bool {
			return c.Type == v1.PersistentVolumeClaimFileSystemResizePending && c.Status == v1.ConditionTrue
		})
		last = "volume " + capacity.String() + ", allocated " + allocated.String() + ", status " + string(st)
		return capacity.Cmp(want) == 0 && allocated.Cmp(want) == 0 && st == v1.PersistentVolumeClaimNodeResizePending && pending, nil
	})
	if err != nil {
		t.Fatalf("claim %s not expanded to 3Gi: %s; resizer log:\n%s", name, last, u.Log("resizer", 30))
	}
	t.Logf("expanded: %s", last)
}
