package snapshottopology

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// The snapshot resources as the scheduler names custom resources in
// events: "<plural>.<version>.<group>". For such names the scheduler
// starts an informer of its own dynamic informer factory and feeds its
// events to the hints below.
var (
	snapshotEvents = eventResource(snapshotapi.VolumeSnapshots)
	contentEvents  = eventResource(snapshotapi.VolumeSnapshotContents)
)

func eventResource(gvr schema.GroupVersionResource) fwk.EventResource {
	return fwk.EventResource(gvr.Resource + "." + gvr.Version + "." + gvr.Group)
}

// EventsToRegister lists the events that can make a pod this plugin
// rejected schedulable, and the deletions of snapshots and contents:
// removing one never makes a pod schedulable, but its reason names the
// object, so the pod is retried to tell the user it is being deleted or
// gone rather than keep a reason written before (scenarios 7a/7b of the
// e2e suite). With the gate off the plugin rejects nothing and registers
// nothing, so the scheduler does not watch the snapshot resources either.
func (pl *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	if !pl.enabled {
		return nil, nil
	}
	snapshotActions := fwk.Add | fwk.Update
	if requeueOnDeletion {
		snapshotActions |= fwk.Delete
	}
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: snapshotEvents, ActionType: snapshotActions}, QueueingHintFn: pl.isSchedulableAfterSnapshotChange},
		{Event: fwk.ClusterEvent{Resource: contentEvents, ActionType: snapshotActions}, QueueingHintFn: pl.isSchedulableAfterContentChange},
		{Event: fwk.ClusterEvent{Resource: fwk.PersistentVolumeClaim, ActionType: fwk.Add | fwk.Update}, QueueingHintFn: pl.isSchedulableAfterClaimChange},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterSnapshotChange queues the pod when one of its
// snapshots appears, is bound to another content, or is deleted.
func (pl *Plugin) isSchedulableAfterSnapshotChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	snap, changed, err := snapshotChange(oldObj, newObj)
	return pl.hintFor(logger, pod, "VolumeSnapshot", snap, changed, err)
}

// isSchedulableAfterContentChange queues the pod when a content of one of
// its snapshots appears or changes what the plugin reads from it.
func (pl *Plugin) isSchedulableAfterContentChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	snap, changed, err := contentChange(oldObj, newObj)
	return pl.hintFor(logger, pod, "VolumeSnapshotContent", snap, changed, err)
}

func (pl *Plugin) hintFor(logger klog.Logger, pod *v1.Pod, kind string, snap types.NamespacedName, changed bool, err error) (fwk.QueueingHint, error) {
	if err != nil {
		return fwk.Queue, err
	}
	if !changed || !pl.usesSnapshot(pod, snap) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Snapshot of the pod changed, which may make it schedulable", "pod", klog.KObj(pod), "kind", kind, "snapshot", snap)
	return fwk.Queue, nil
}

// isSchedulableAfterClaimChange queues the pod when one of its PVCs
// appears, or binds, or changes its source.
func (pl *Plugin) isSchedulableAfterClaimChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	old, pvc, err := util.As[*v1.PersistentVolumeClaim](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if !usesClaim(pod, pvc.Namespace, pvc.Name) {
		return fwk.QueueSkip, nil
	}
	if old != nil && isBound(old) == isBound(pvc) && sameSource(old, pvc) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("PVC of the pod was added or changed, which may make it schedulable", "pod", klog.KObj(pod), "pvc", klog.KObj(pvc))
	return fwk.Queue, nil
}

func sameSource(a, b *v1.PersistentVolumeClaim) bool {
	sa, oka := snapshotapi.SourceOf(a)
	sb, okb := snapshotapi.SourceOf(b)
	return oka == okb && sa == sb
}

// isSchedulableAfterNodeChange queues the pod when a node that did not
// satisfy all of its snapshots' topologies now does. A pod whose sources
// do not resolve waits for those objects instead: no node fixes them.
func (pl *Plugin) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	old, node, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	sources, st := pl.podSources(context.Background(), pod)
	if st.Code() == fwk.Error {
		return fwk.Queue, st.AsError()
	}
	if !st.IsSuccess() || !fits(sources, node) || (old != nil && fits(sources, old)) {
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Node now lies within the pod's snapshot topologies", "pod", klog.KObj(pod), "node", klog.KObj(node))
	return fwk.Queue, nil
}

func fits(sources []source, node *v1.Node) bool {
	for _, s := range sources {
		if !v1helper.MatchTopologySelectorTerms(s.terms, labels.Set(node.Labels)) {
			return false
		}
	}
	return true
}

// usesSnapshot reports whether pod restores, through one of its PVCs,
// from snap. A generic ephemeral volume whose PVC is not created yet is
// read from its template, which the PVC will copy.
func (pl *Plugin) usesSnapshot(pod *v1.Pod, snap types.NamespacedName) bool {
	for i := range pod.Spec.Volumes {
		pvc := pl.volumeClaim(pod, &pod.Spec.Volumes[i])
		if pvc == nil {
			continue
		}
		if s, ok := snapshotapi.SourceOf(pvc); ok && s == snap {
			return true
		}
	}
	return false
}

// volumeClaim is the PVC of a volume as far as its source goes, or nil.
func (pl *Plugin) volumeClaim(pod *v1.Pod, vol *v1.Volume) *v1.PersistentVolumeClaim {
	lister := pl.pvcs.PersistentVolumeClaims(pod.Namespace)
	switch {
	case vol.PersistentVolumeClaim != nil:
		pvc, _ := lister.Get(vol.PersistentVolumeClaim.ClaimName)
		return pvc
	case vol.Ephemeral != nil:
		if pvc, err := lister.Get(ephemeral.VolumeClaimName(pod, vol)); err == nil {
			return pvc
		}
		if tmpl := vol.Ephemeral.VolumeClaimTemplate; tmpl != nil {
			return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace}, Spec: tmpl.Spec}
		}
	}
	return nil
}
