package snapshottopology

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
)

// claim is one PVC a pod uses: by name, or through a generic ephemeral
// volume, whose PVC the ephemeral controller creates under a derived name
// and must be owned by the pod.
type claim struct {
	name      string
	ephemeral bool
}

// podClaims lists the PVCs of pod's volumes in volume order.
func podClaims(pod *v1.Pod) []claim {
	var out []claim
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil:
			out = append(out, claim{name: vol.PersistentVolumeClaim.ClaimName})
		case vol.Ephemeral != nil:
			out = append(out, claim{name: ephemeral.VolumeClaimName(pod, vol), ephemeral: true})
		}
	}
	return out
}

// usesClaim reports whether pod mounts the PVC namespace/name.
func usesClaim(pod *v1.Pod, namespace, name string) bool {
	if pod.Namespace != namespace {
		return false
	}
	for _, c := range podClaims(pod) {
		if c.name == name {
			return true
		}
	}
	return false
}

// isBound reports whether a PVC already has its volume: then the volume
// exists, no restore happens, and the PV's own nodeAffinity (enforced by
// the VolumeBinding plugin) decides where the pod may run.
func isBound(pvc *v1.PersistentVolumeClaim) bool {
	return pvc.Spec.VolumeName != "" || pvc.Status.Phase == v1.ClaimBound
}
