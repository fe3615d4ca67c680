package snapshottopology

import (
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/ephemeral"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

// source is where one PVC of a pod restores from: the snapshot and the
// topology of its content, resolved through the informers' caches.
type source struct {
	claim    string
	snapshot types.NamespacedName
	content  string
	terms    []v1.TopologySelectorTerm
}

// podSources resolves every unbound, snapshot-sourced PVC of pod. A
// failure names the object that stops the resolution; every failure that
// only an API change can fix is UnschedulableAndUnresolvable, and the
// events in events.go bring the pod back when that change happens.
func (pl *Plugin) podSources(pod *v1.Pod) ([]source, *fwk.Status) {
	var out []source
	for _, c := range podClaims(pod) {
		snap, ok, st := pl.claimSnapshot(pod, c)
		if !st.IsSuccess() {
			return nil, st
		}
		if !ok {
			continue
		}
		content, terms, st := pl.snapshotTopology(snap)
		if !st.IsSuccess() {
			return nil, st
		}
		out = append(out, source{claim: c.name, snapshot: snap, content: content, terms: terms})
	}
	return out, nil
}

// claimSnapshot returns the snapshot a pod's PVC restores from; ok is
// false for a PVC that is bound or restores from something else.
func (pl *Plugin) claimSnapshot(pod *v1.Pod, c claim) (types.NamespacedName, bool, *fwk.Status) {
	pvc, err := pl.pvcs.PersistentVolumeClaims(pod.Namespace).Get(c.name)
	if err != nil {
		return types.NamespacedName{}, false, lookupStatus(err, fmt.Sprintf("PersistentVolumeClaim %q", pod.Namespace+"/"+c.name))
	}
	if c.ephemeral {
		if err := ephemeral.VolumeIsForPod(pod, pvc); err != nil {
			return types.NamespacedName{}, false, unresolvable(err.Error())
		}
	}
	if isBound(pvc) {
		return types.NamespacedName{}, false, nil
	}
	snap, ok := snapshotSource(pvc)
	return snap, ok, nil
}

// snapshotTopology follows a VolumeSnapshot to its bound content and
// returns the content's name and validated nodeAffinity.
func (pl *Plugin) snapshotTopology(snap types.NamespacedName) (string, []v1.TopologySelectorTerm, *fwk.Status) {
	what := fmt.Sprintf("VolumeSnapshot %q", snap.String())
	vs := &snapshotv1.VolumeSnapshot{}
	if st := pl.get(pl.snapshots.ByNamespace(snap.Namespace).Get(snap.Name)).into(what, vs); !st.IsSuccess() {
		return "", nil, st
	}
	if vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil || *vs.Status.BoundVolumeSnapshotContentName == "" {
		return "", nil, unresolvable(what + " is not bound to a VolumeSnapshotContent yet")
	}
	name := *vs.Status.BoundVolumeSnapshotContentName
	what = fmt.Sprintf("VolumeSnapshotContent %q of %s", name, what)
	u := pl.get(pl.contents.Get(name))
	vsc := &snapshotv1.VolumeSnapshotContent{}
	if st := u.into(what, vsc); !st.IsSuccess() {
		return "", nil, st
	}
	if st := checkContent(vs, vsc, what); !st.IsSuccess() {
		return "", nil, st
	}
	terms, err := snapshotapi.NodeAffinity(u.obj)
	if err == nil {
		err = topology.Validate(terms)
	}
	if err != nil {
		return "", nil, unresolvable(fmt.Sprintf("%s has a malformed spec.nodeAffinity: %v", what, err))
	}
	return name, terms, nil
}

// checkContent refuses a content whose topology cannot be trusted yet:
// one bound to another snapshot, or one whose snapshot the driver has not
// cut. The snapshotter writes nodeAffinity from CreateSnapshot's answer,
// so until the content has a snapshot handle an absent nodeAffinity means
// "not known yet", not "accessible everywhere".
func checkContent(vs *snapshotv1.VolumeSnapshot, vsc *snapshotv1.VolumeSnapshotContent, what string) *fwk.Status {
	ref := vsc.Spec.VolumeSnapshotRef
	if ref.Namespace != vs.Namespace || ref.Name != vs.Name || (ref.UID != "" && ref.UID != vs.UID) {
		return unresolvable(fmt.Sprintf("%s is bound to VolumeSnapshot %q (uid %q), not to this one (uid %q)",
			what, ref.Namespace+"/"+ref.Name, ref.UID, vs.UID))
	}
	preProvisioned := vsc.Spec.Source.SnapshotHandle != nil && *vsc.Spec.Source.SnapshotHandle != ""
	cut := vsc.Status != nil && vsc.Status.SnapshotHandle != nil && *vsc.Status.SnapshotHandle != ""
	if !preProvisioned && !cut {
		return unresolvable(what + " has no snapshot handle yet, so the snapshot's topology is not known")
	}
	return nil
}

// fetched is an object read from a dynamic lister, or why it is missing.
type fetched struct {
	obj *unstructured.Unstructured
	err error
}

func (pl *Plugin) get(obj runtime.Object, err error) fetched {
	if err != nil {
		return fetched{err: err}
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fetched{err: fmt.Errorf("informer returned %T, not an unstructured object", obj)}
	}
	return fetched{obj: u}
}

// into converts the object into a typed snapshot struct; what names the
// object in the returned status.
func (f fetched) into(what string, out any) *fwk.Status {
	if f.err != nil {
		return lookupStatus(f.err, what)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(f.obj.UnstructuredContent(), out); err != nil {
		return unresolvable(fmt.Sprintf("%s is malformed: %v", what, err))
	}
	return nil
}

// lookupStatus turns a lister error into a status: a missing object is
// unresolvable until it is created, anything else is an internal error.
func lookupStatus(err error, what string) *fwk.Status {
	if apierrors.IsNotFound(err) {
		return unresolvable(what + " not found")
	}
	return fwk.AsStatus(fmt.Errorf("looking up %s: %w", what, err))
}

// unresolvable rejects the pod with a bounded reason.
func unresolvable(reason string) *fwk.Status {
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, bounded(reason))
}
