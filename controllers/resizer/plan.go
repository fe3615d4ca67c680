package resizer

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// claimState is what decides a claim's next expansion, read from the
// claim and its volume.
type claimState struct {
	spec   resource.Quantity      // spec.resources.requests.storage
	pv     resource.Quantity      // the volume's spec.capacity.storage
	status v1.ClaimResourceStatus // allocatedResourceStatuses.storage, "" when unset
	// allocated is status.allocatedResources.storage, the size the last
	// expansion aimed at; nil when none was recorded.
	allocated *resource.Quantity
	// lastFinal: the last ControllerExpandVolume of this claim failed
	// finally (the call is not in progress any more), so a new request
	// may replace the size it aimed at.
	lastFinal bool
}

func stateOf(pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, lastFinal bool) claimState {
	s := claimState{
		spec:      pvc.Spec.Resources.Requests[v1.ResourceStorage],
		pv:        pv.Spec.Capacity[v1.ResourceStorage],
		status:    pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage],
		lastFinal: lastFinal,
	}
	if a, ok := pvc.Status.AllocatedResources[v1.ResourceStorage]; ok {
		s.allocated = &a
	}
	return s
}

// allocatedOr is the recorded target, or q when none was recorded.
func (s claimState) allocatedOr(q resource.Quantity) resource.Quantity {
	if s.allocated != nil {
		return *s.allocated
	}
	return q
}

// target is the size to expand the volume to, or "" and why there is
// nothing for the controller to do. It follows kubelet and kube's expand
// controller on the recovery protocol of RecoverVolumeExpansionFailure
// (GA since Kubernetes 1.34): an expansion in progress on the controller
// or the node finishes at the size it started with, a user who lowers the
// request after a failure gets the lower size, and kubelet's
// NodeResizeInfeasible hands the volume back to the controller.
func (s claimState) target() (resource.Quantity, string) {
	if s.pv.Cmp(s.spec) < 0 {
		return s.growTarget()
	}
	return s.settledTarget()
}

// growTarget: the volume is smaller than requested.
func (s claimState) growTarget() (resource.Quantity, string) {
	switch s.status {
	case v1.PersistentVolumeClaimNodeResizeInfeasible:
		return s.allocatedOr(s.spec), ""
	case v1.PersistentVolumeClaimNodeResizePending, v1.PersistentVolumeClaimNodeResizeInProgress:
		size := s.allocatedOr(s.spec)
		if s.pv.Cmp(size) >= 0 {
			return resource.Quantity{}, "the volume has grown; kubelet finishes the expansion on the node"
		}
		return size, ""
	case v1.PersistentVolumeClaimControllerResizeInProgress:
		// A call that did not fail finally may still be running in
		// the plugin: finish it at its size before a new one.
		if s.lastFinal {
			return s.spec, ""
		}
		return s.allocatedOr(s.spec), ""
	case v1.PersistentVolumeClaimControllerResizeInfeasible:
		if s.allocated != nil && s.allocated.Cmp(s.spec) == 0 {
			return resource.Quantity{}, "the plugin refused this size finally; waiting for the claim's request to change"
		}
		return s.spec, ""
	}
	return s.spec, ""
}

// settledTarget: the volume is at least as large as requested.
func (s claimState) settledTarget() (resource.Quantity, string) {
	switch s.status {
	case v1.PersistentVolumeClaimNodeResizePending, v1.PersistentVolumeClaimNodeResizeInProgress:
		return resource.Quantity{}, "kubelet finishes the expansion on the node"
	case v1.PersistentVolumeClaimNodeResizeInfeasible, v1.PersistentVolumeClaimControllerResizeInProgress:
		return s.allocatedOr(s.spec), ""
	case v1.PersistentVolumeClaimControllerResizeInfeasible:
		// The user lowered the request to a size the volume has.
		return s.spec, ""
	}
	if s.allocated != nil {
		// Expanded, but not recorded: record it.
		return *s.allocated, ""
	}
	return s.spec, ""
}
