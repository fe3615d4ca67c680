package resizer

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"
)

// The writes of the expansion protocol to a claim's status. Each builds
// the new claim from the old one and sends the difference through kube's
// volumeutil.PatchPVCStatus, which kubelet uses for its side of the
// protocol: a strategic merge patch of pvc/status that carries the old
// resourceVersion, so a write based on a stale claim fails with a
// conflict and is retried instead of undoing kubelet's.

// condition is a true resize condition of the claim, stamped now.
func condition(t v1.PersistentVolumeClaimConditionType, message string) v1.PersistentVolumeClaimCondition {
	return v1.PersistentVolumeClaimCondition{Type: t, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(), Message: message}
}

// withStorage sets allocatedResourceStatuses.storage (delete: "").
func withStorage(pvc *v1.PersistentVolumeClaim, status v1.ClaimResourceStatus) {
	if status == "" {
		delete(pvc.Status.AllocatedResourceStatuses, v1.ResourceStorage)
		if len(pvc.Status.AllocatedResourceStatuses) == 0 {
			pvc.Status.AllocatedResourceStatuses = nil
		}
		return
	}
	if pvc.Status.AllocatedResourceStatuses == nil {
		pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{}
	}
	pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage] = status
}

// nodeExpansionNotRequired sets or removes the annotation kubelet reads
// on a ReadWriteMany claim: without it, kubelet expands the file system
// on every node even when the claim's capacity is already recorded.
func nodeExpansionNotRequired(pvc *v1.PersistentVolumeClaim, set bool) {
	if !set {
		delete(pvc.Annotations, volumetypes.NodeExpansionNotRequired)
		return
	}
	metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, volumetypes.NodeExpansionNotRequired, "true")
}

// patchClaim sends the change from old to changed, or nothing when there
// is none (a repeated sync of a claim whose status already says it).
func patchClaim(kube kubernetes.Interface, old, changed *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if equality.Semantic.DeepEqual(old.Status, changed.Status) && equality.Semantic.DeepEqual(old.Annotations, changed.Annotations) {
		return old, nil
	}
	return volumeutil.PatchPVCStatus(old, changed, kube)
}

// markInProgress records that the controller expands the volume to size:
// condition Resizing, ControllerResizeInProgress, allocatedResources.
// Other resize conditions (an old error) go, unless the size is the one
// already recorded: then the claim is left as it is.
func markInProgress(kube kubernetes.Interface, pvc *v1.PersistentVolumeClaim, size resource.Quantity) (*v1.PersistentVolumeClaim, error) {
	if a, ok := pvc.Status.AllocatedResources[v1.ResourceStorage]; ok && a.Cmp(size) == 0 &&
		pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage] == v1.PersistentVolumeClaimControllerResizeInProgress {
		return pvc, nil
	}
	c := pvc.DeepCopy()
	c = volumeutil.MergeResizeConditionOnPVC(c, []v1.PersistentVolumeClaimCondition{condition(v1.PersistentVolumeClaimResizing, "")}, false)
	withStorage(c, v1.PersistentVolumeClaimControllerResizeInProgress)
	if c.Status.AllocatedResources == nil {
		c.Status.AllocatedResources = v1.ResourceList{}
	}
	c.Status.AllocatedResources[v1.ResourceStorage] = size
	nodeExpansionNotRequired(c, false)
	return patchClaim(kube, pvc, c)
}

// markNodePending hands the claim to kubelet: FileSystemResizePending
// and NodeResizePending, which kubelet's NodeExpander waits for before it
// calls NodeExpandVolume (pkg/volume/util/operationexecutor).
func markNodePending(kube kubernetes.Interface, pvc *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	c := pvc.DeepCopy()
	c = volumeutil.MergeResizeConditionOnPVC(c, []v1.PersistentVolumeClaimCondition{condition(v1.PersistentVolumeClaimFileSystemResizePending,
		"Waiting for user to (re-)start a pod to finish file system resize of volume on node.")}, true)
	withStorage(c, v1.PersistentVolumeClaimNodeResizePending)
	nodeExpansionNotRequired(c, false)
	return patchClaim(kube, pvc, c)
}

// markFinished records capacity as the claim's and ends the expansion:
// no resize condition, no storage status.
func markFinished(kube kubernetes.Interface, pvc *v1.PersistentVolumeClaim, capacity resource.Quantity) (*v1.PersistentVolumeClaim, error) {
	c := pvc.DeepCopy()
	if c.Status.Capacity == nil {
		c.Status.Capacity = v1.ResourceList{}
	}
	c.Status.Capacity[v1.ResourceStorage] = capacity
	c = volumeutil.MergeResizeConditionOnPVC(c, nil, false)
	withStorage(c, "")
	nodeExpansionNotRequired(c, true)
	return patchClaim(kube, pvc, c)
}

// markFailed records a failed ControllerExpandVolume: condition
// ControllerResizeError and, when the failure is final for this size,
// ControllerResizeInfeasible, which kube's API validation reads to let
// the user lower the request again.
func markFailed(kube kubernetes.Interface, pvc *v1.PersistentVolumeClaim, infeasible bool, err error) (*v1.PersistentVolumeClaim, error) {
	c := pvc.DeepCopy()
	c = volumeutil.MergeResizeConditionOnPVC(c, []v1.PersistentVolumeClaimCondition{condition(v1.PersistentVolumeClaimControllerResizeError,
		fmt.Sprintf("failed to expand pvc with %v", err))}, true)
	if infeasible {
		withStorage(c, v1.PersistentVolumeClaimControllerResizeInfeasible)
	}
	return patchClaim(kube, pvc, c)
}
