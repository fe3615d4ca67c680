package snapshottopology

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/ephemeral"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// source is where one PVC of a pod restores from: the snapshot and the
// topology of its content, resolved through the informers' caches.
type source struct {
	claim    string
	snapshot types.NamespacedName
	content  string
	terms    []v1.TopologySelectorTerm
	// deleting is snapshotapi.Resolved.Deleting: what of the two is being
	// deleted, for the reason the user reads.
	deleting string
}

// podSources resolves every unbound, snapshot-sourced PVC of pod with
// snapshotapi.Resolver, the provisioner's resolver too. A failure names
// the object that stops the resolution; every failure that only an API
// change can fix is UnschedulableAndUnresolvable, and the events in
// events.go bring the pod back when that change happens.
func (pl *Plugin) podSources(ctx context.Context, pod *v1.Pod) ([]source, *fwk.Status) {
	var out []source
	for _, c := range podClaims(pod) {
		pvc, st := pl.unboundClaim(pod, c)
		if !st.IsSuccess() {
			return nil, st
		}
		if pvc == nil {
			continue
		}
		src, err := pl.resolver.Resolve(ctx, pvc)
		if err != nil {
			return nil, resolveStatus(err)
		}
		if src != nil {
			out = append(out, source{claim: c.name, snapshot: src.Snapshot, content: src.Content, terms: src.NodeAffinity, deleting: src.Deleting})
		}
	}
	return out, nil
}

// unboundClaim returns a pod's PVC, or nil when it is bound: then the
// volume exists, no restore happens, and VolumeBinding enforces the PV's
// own nodeAffinity.
func (pl *Plugin) unboundClaim(pod *v1.Pod, c claim) (*v1.PersistentVolumeClaim, *fwk.Status) {
	pvc, err := pl.pvcs.PersistentVolumeClaims(pod.Namespace).Get(c.name)
	if err != nil {
		what := fmt.Sprintf("PersistentVolumeClaim %q", pod.Namespace+"/"+c.name)
		if apierrors.IsNotFound(err) {
			return nil, unresolvable(what + " not found")
		}
		return nil, fwk.AsStatus(fmt.Errorf("looking up %s: %w", what, err))
	}
	if c.ephemeral {
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return nil, unresolvable(err.Error())
		}
	}
	if isBound(pvc) {
		return nil, nil
	}
	return pvc, nil
}

// resolveStatus maps the resolver's failures to statuses: a read that
// failed for another reason than a missing object is an Error, which
// backs off and retries; every other failure needs an object to change,
// which preempting pods cannot do, so it is UnschedulableAndUnresolvable
// with the resolver's message, bounded.
func resolveStatus(err error) *fwk.Status {
	var re *snapshotapi.Error
	if !errors.As(err, &re) || re.Reason == snapshotapi.Unavailable {
		return fwk.AsStatus(err)
	}
	return unresolvable(re.Message)
}

// unresolvable rejects the pod with a bounded reason.
func unresolvable(reason string) *fwk.Status {
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, bounded(reason))
}
