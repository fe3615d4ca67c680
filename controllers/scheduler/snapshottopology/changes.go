package snapshottopology

import (
	"errors"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// The readers of snapshot events, shared by the queueing hints (on the
// scheduler's informers) and the activation handlers (on the plugin's):
// both must agree on which changes matter.

// snapshotChange reads a VolumeSnapshot event: which snapshot, and
// whether it was added, bound to another content, or deleted (a
// deletionTimestamp set, or the object gone: newObj nil).
func snapshotChange(oldObj, newObj any) (types.NamespacedName, bool, error) {
	old, cur, err := convertPair[snapshotv1.VolumeSnapshot](oldObj, newObj)
	if err != nil {
		return types.NamespacedName{}, false, err
	}
	if cur == nil {
		return types.NamespacedName{Namespace: old.Namespace, Name: old.Name}, requeueOnDeletion, nil
	}
	snap := types.NamespacedName{Namespace: cur.Namespace, Name: cur.Name}
	return snap, old == nil || boundContent(old) != boundContent(cur) || deletionBegan(&old.ObjectMeta, &cur.ObjectMeta), nil
}

// deletionBegan says whether an update set the object's
// deletionTimestamp. A deletion never makes a pod schedulable, but the
// pod's reason names the object, so the pod is retried to say that it
// is going away (or gone) rather than keep a reason written before.
func deletionBegan(old, cur *metav1.ObjectMeta) bool {
	return requeueOnDeletion && old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil
}

func boundContent(vs *snapshotv1.VolumeSnapshot) string {
	if vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil {
		return ""
	}
	return *vs.Status.BoundVolumeSnapshotContentName
}

// contentChange reads a VolumeSnapshotContent event: the snapshot it is
// bound to, and whether it was added, deleted, or changed in anything the
// plugin reads: its snapshot reference, whether the snapshot is cut, its
// nodeAffinity, whether it is being deleted.
func contentChange(oldObj, newObj any) (types.NamespacedName, bool, error) {
	oldU, curU, err := util.As[*unstructured.Unstructured](oldObj, newObj)
	if err != nil {
		return types.NamespacedName{}, false, err
	}
	old, cur, err := convertPair[snapshotv1.VolumeSnapshotContent](oldObj, newObj)
	if err != nil {
		return types.NamespacedName{}, false, err
	}
	if cur == nil {
		ref := old.Spec.VolumeSnapshotRef
		return types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, requeueOnDeletion, nil
	}
	ref := cur.Spec.VolumeSnapshotRef
	snap := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	if old == nil {
		return snap, true, nil
	}
	changed := old.Spec.VolumeSnapshotRef != ref || snapshotapi.IsCut(old) != snapshotapi.IsCut(cur) ||
		!equality.Semantic.DeepEqual(nodeAffinityField(oldU), nodeAffinityField(curU)) ||
		deletionBegan(&old.ObjectMeta, &cur.ObjectMeta)
	return snap, changed, nil
}

// nodeAffinityField is the raw field, so that a change from one malformed
// value to another is seen too.
func nodeAffinityField(u *unstructured.Unstructured) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, snapshotapi.NodeAffinityPath...)
	return v
}

// convertPair converts an event's unstructured objects into typed ones;
// old is nil for an add, cur for a deletion.
func convertPair[T any](oldObj, newObj any) (*T, *T, error) {
	oldU, curU, err := util.As[*unstructured.Unstructured](oldObj, newObj)
	if err != nil {
		return nil, nil, err
	}
	if curU == nil {
		if oldU == nil {
			return nil, nil, errors.New("event without an object")
		}
		old, err := convert[T](oldU)
		return old, nil, err
	}
	cur, err := convert[T](curU)
	if err != nil || oldU == nil {
		return nil, cur, err
	}
	old, err := convert[T](oldU)
	return old, cur, err
}

func convert[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), out); err != nil {
		return nil, fmt.Errorf("converting %s %q: %w", u.GetKind(), u.GetNamespace()+"/"+u.GetName(), err)
	}
	return out, nil
}
