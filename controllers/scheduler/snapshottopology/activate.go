package snapshottopology

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// addActivationHandlers closes the gap between two informers. The
// scheduler runs the queueing hints on events of its own snapshot
// informers, while PreFilter reads the plugin's informers, which may
// deliver the same change a little later. A pod requeued by a hint could
// then be scheduled against the stale copy, be rejected again, and wait
// for the periodic flush of unschedulable pods (five minutes). So when the
// plugin's own informer sees a change a hint would queue a pod for, the
// plugin activates the pending pods of that snapshot's namespace that use
// it; a pod already in a scheduling cycle is then retried once the cycle
// ends.
func (pl *Plugin) addActivationHandlers(snapshots, contents cache.SharedIndexInformer) error {
	if _, err := snapshots.AddEventHandler(pl.activationHandler("VolumeSnapshot", snapshotChange)); err != nil {
		return err
	}
	_, err := contents.AddEventHandler(pl.activationHandler("VolumeSnapshotContent", contentChange))
	return err
}

func (pl *Plugin) activationHandler(kind string, change func(oldObj, newObj any) (types.NamespacedName, bool, error)) cache.ResourceEventHandler {
	on := func(oldObj, newObj any) {
		snap, changed, err := change(oldObj, newObj)
		if err != nil {
			pl.logger.V(4).Info("Ignoring unreadable object", "kind", kind, "err", err)
			return
		}
		if changed {
			pl.activateUsersOf(snap)
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		// The initial list replays every object; no pod waits on those.
		AddFunc: func(obj any, initial bool) {
			if !initial {
				on(nil, obj)
			}
		},
		UpdateFunc: on,
		// A tombstone is unwrapped by the change readers (util.As).
		DeleteFunc: func(obj any) { on(obj, nil) },
	}
}

// activateUsersOf moves the pending pods that restore from snap to the
// active queue. It looks in snap's namespace only, which is where PVCs
// restoring from it live unless they use cross-namespace data sources;
// those rely on the queueing hints alone.
func (pl *Plugin) activateUsersOf(snap types.NamespacedName) {
	pods, err := pl.pods.Pods(snap.Namespace).List(labels.Everything())
	if err != nil {
		pl.logger.Error(err, "Listing pods to activate", "snapshot", snap)
		return
	}
	users := map[string]*v1.Pod{}
	for _, pod := range pods {
		if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && pl.usesSnapshot(pod, snap) {
			users[pod.Namespace+"/"+pod.Name] = pod
		}
	}
	if len(users) == 0 {
		return
	}
	pl.logger.V(4).Info("Activating pods after a snapshot change", "snapshot", snap, "pods", len(users))
	pl.handle.Activate(pl.logger, users)
}
