package resizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/worker"
)

// Event reasons of the modify loop, upstream csi-resizer's.
const (
	reasonModifying      = "VolumeModify"
	reasonModifyFailed   = "VolumeModifyFailed"
	reasonModifySucceded = "VolumeModifySuccessful"
)

// modifyLoop applies VolumeAttributesClasses to the volumes of claims
// (controllers/README.md, "ModifyVolume, step by step"). It shares the
// Controller's claim and volume caches, clientset and recorder, and has
// its own queue, so that a slow modification never delays an expansion or
// the other way round.
type modifyLoop struct {
	c        *Controller
	modifier Modifier
	classes  storagelisters.VolumeAttributesClassLister
	queue    workqueue.TypedRateLimitingInterface[string]
	// refused is each claim's class that the plugin refused, so that a
	// sync from a cache that does not show the Infeasible status yet
	// does not call again; the status does the same after a restart.
	refused sync.Map // key → class name
	// applied is, for each claim just modified, the resourceVersions
	// its cache may still show from before the success was recorded: a
	// sync queued meanwhile (a class added, a resync) must not read that
	// stale claim as still waiting and call ControllerModifyVolume again.
	applied sync.Map // key → []string
}

// EnableModify adds the modify loop, with m calling the plugin, before
// Run: for a plugin with MODIFY_VOLUME on a cluster that serves
// storage.k8s.io/v1 VolumeAttributesClasses.
func (c *Controller) EnableModify(m Modifier) error {
	classes := c.factory.Storage().V1().VolumeAttributesClasses()
	l := &modifyLoop{
		c: c, modifier: m, classes: classes.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](c.o.RetryIntervalStart, c.o.RetryIntervalMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "modifier"}),
	}
	if _, err := classes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: l.classAdded}); err != nil {
		return err
	}
	if _, err := c.factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    l.enqueue,
		UpdateFunc: onClaimUpdate(modifyChanged, l.enqueue),
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				l.refused.Delete(key)
				l.applied.Delete(key)
			}
		},
	}); err != nil {
		return err
	}
	c.modify = l
	return nil
}

func (l *modifyLoop) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		l.queue.Add(key)
	}
}

// modifyChanged says whether a claim update matters to the modify loop:
// its class, current class or phase changed, or it is a resync (the same
// object); not the loop's own writes of modifyVolumeStatus, so a failing
// claim waits for its backoff.
func modifyChanged(o, n *v1.PersistentVolumeClaim) bool {
	return !ptr.Equal(o.Spec.VolumeAttributesClassName, n.Spec.VolumeAttributesClassName) ||
		!ptr.Equal(o.Status.CurrentVolumeAttributesClassName, n.Status.CurrentVolumeAttributesClassName) ||
		o.Status.Phase != n.Status.Phase || equality.Semantic.DeepEqual(o, n)
}

// classAdded enqueues the claims that wait for the class (Pending).
func (l *modifyLoop) classAdded(obj any) {
	vac, ok := obj.(*storagev1.VolumeAttributesClass)
	if !ok {
		return
	}
	claims, err := l.c.claims.lister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pvc := range claims {
		if ptr.Deref(pvc.Spec.VolumeAttributesClassName, "") == vac.Name {
			l.enqueue(pvc)
		}
	}
}

// run works the queue until it shuts down.
func (l *modifyLoop) run(ctx context.Context) {
	worker.Run(ctx, l.queue, l.sync, func(ctx context.Context, key string, err error) {
		klog.FromContext(ctx).Error(err, "Modifying failed; retrying", "pvc", key, "retries", l.queue.NumRequeues(key))
	})
}

// sync brings one claim's volume to its class. An error means: retry
// with backoff.
func (l *modifyLoop) sync(ctx context.Context, key string) error {
	pvc, pv, err := l.c.objects(key)
	if err != nil || pvc == nil {
		return err
	}
	if l.stale(key, pvc.ResourceVersion) {
		return nil // the update that records the success brings the claim back
	}
	target := ptr.Deref(pvc.Spec.VolumeAttributesClassName, "")
	st := pvc.Status.ModifyVolumeStatus
	switch {
	case target == "" || target == ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, ""):
		// Nothing to apply; a class set back to the current one after
		// an infeasible change ends that attempt.
		_, err := l.setStatus(pvc, nil, "", "")
		return err
	case l.wasRefused(key, target) ||
		st != nil && st.Status == v1.PersistentVolumeClaimModifyVolumeInfeasible && st.TargetVolumeAttributesClassName == target:
		return nil // refused for good: waits for the user to change the class
	}
	vac, err := l.classes.Get(target)
	if apierrors.IsNotFound(err) {
		// Pending: "the specified VolumeAttributesClass not existing";
		// classAdded brings the claim back.
		_, err := l.setStatus(pvc, modifyStatus(target, v1.PersistentVolumeClaimModifyVolumePending), "", "")
		return err
	}
	if err != nil {
		return err
	}
	if vac.DriverName != l.c.o.DriverName {
		msg := fmt.Sprintf("VolumeAttributesClass %s is for driver %s, not %s of volume %s", target, vac.DriverName, l.c.o.DriverName, pv.Name)
		l.c.recorder.Event(pvc, v1.EventTypeWarning, reasonModifyFailed, msg)
		_, err := l.setStatus(pvc, modifyStatus(target, v1.PersistentVolumeClaimModifyVolumeInfeasible), v1.PersistentVolumeClaimVolumeModifyVolumeError, msg)
		return err
	}
	return l.apply(ctx, key, pvc, pv, vac)
}

// wasRefused says whether target is the class last refused for the
// claim; a claim of another class forgets it.
func (l *modifyLoop) wasRefused(key, target string) bool {
	refused, ok := l.refused.Load(key)
	if ok && refused != target {
		l.refused.Delete(key)
	}
	return ok && refused == target
}

// stale says whether rv is a version of the claim from before a
// modification of it was recorded; a newer one forgets the modification.
func (l *modifyLoop) stale(key, rv string) bool {
	old, ok := l.applied.Load(key)
	if !ok {
		return false
	}
	if slices.Contains(old.([]string), rv) {
		return true
	}
	l.applied.Delete(key)
	return false
}

// apply calls the plugin with the class's parameters and records the
// outcome.
func (l *modifyLoop) apply(ctx context.Context, key string, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, vac *storagev1.VolumeAttributesClass) error {
	read := pvc.ResourceVersion
	pvc, err := l.setStatus(pvc, modifyStatus(vac.Name, v1.PersistentVolumeClaimModifyVolumeInProgress),
		v1.PersistentVolumeClaimVolumeModifyingVolume, "modifying volume "+pv.Name+" with VolumeAttributesClass "+vac.Name)
	if err != nil {
		return err
	}
	before := []string{read, pvc.ResourceVersion}
	l.c.recorder.Eventf(pvc, v1.EventTypeNormal, reasonModifying, "External resizer is modifying volume %s with VolumeAttributesClass %s", pv.Name, vac.Name)
	callCtx, cancel := context.WithTimeout(ctx, l.c.o.Timeout)
	defer cancel()
	if err := l.modifier.Modify(callCtx, pv, vac.Parameters); err != nil {
		return l.failed(key, pvc, pv, vac.Name, err)
	}
	if err := patchVolumeClass(ctx, l.c, pv, vac.Name); err != nil {
		return fmt.Errorf("recording class %s on volume %s: %w", vac.Name, pv.Name, err)
	}
	done := pvc.DeepCopy()
	done.Status.CurrentVolumeAttributesClassName = ptr.To(vac.Name)
	done.Status.ModifyVolumeStatus = nil
	done.Status.Conditions = withModifyCondition(done.Status.Conditions, "", "")
	if _, err := patchClaim(l.c.kube, pvc, done); err != nil {
		return fmt.Errorf("recording class %s on claim: %w", vac.Name, err)
	}
	l.applied.Store(key, before)
	l.c.recorder.Eventf(pvc, v1.EventTypeNormal, reasonModifySucceded, "External resizer modified volume %s with VolumeAttributesClass %s", pv.Name, vac.Name)
	return nil
}

// failed records a refused or failed ControllerModifyVolume: INVALID_ARGUMENT
// (CSI 1.13, ControllerModifyVolume Errors: "Parameters not supported ...
// The SP MUST NOT have applied any modification"), NOT_FOUND and
// OUT_OF_RANGE make the claim Infeasible, not retried until the user
// changes its class; the rest keeps it InProgress and is retried.
func (l *modifyLoop) failed(key string, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, target string, err error) error {
	msg := fmt.Sprintf("modify volume %s with VolumeAttributesClass %s failed: %v", pv.Name, target, err)
	if classify(err) != infeasible {
		l.c.recorder.Event(pvc, v1.EventTypeWarning, reasonModifyFailed, msg)
		if _, werr := l.setStatus(pvc, pvc.Status.ModifyVolumeStatus, v1.PersistentVolumeClaimVolumeModifyVolumeError, msg); werr != nil {
			return werr
		}
		return fmt.Errorf("%s", msg)
	}
	l.refused.Store(key, target)
	l.c.recorder.Event(pvc, v1.EventTypeWarning, reasonModifyFailed, msg+"; this is final: set another VolumeAttributesClass on the claim")
	_, err = l.setStatus(pvc, modifyStatus(target, v1.PersistentVolumeClaimModifyVolumeInfeasible), v1.PersistentVolumeClaimVolumeModifyVolumeError, msg)
	return err
}

func modifyStatus(target string, s v1.PersistentVolumeClaimModifyVolumeStatus) *v1.ModifyVolumeStatus {
	return &v1.ModifyVolumeStatus{TargetVolumeAttributesClassName: target, Status: s}
}

// setStatus writes status.modifyVolumeStatus (nil removes it) and the
// claim's modify condition (cond "" removes it), nothing when they already
// say so.
func (l *modifyLoop) setStatus(pvc *v1.PersistentVolumeClaim, s *v1.ModifyVolumeStatus, cond v1.PersistentVolumeClaimConditionType, msg string) (*v1.PersistentVolumeClaim, error) {
	c := pvc.DeepCopy()
	c.Status.ModifyVolumeStatus = s
	c.Status.Conditions = withModifyCondition(c.Status.Conditions, cond, msg)
	out, err := patchClaim(l.c.kube, pvc, c)
	if err != nil {
		return nil, fmt.Errorf("recording modifyVolumeStatus %v on claim %s/%s: %w", s, pvc.Namespace, pvc.Name, err)
	}
	return out, nil
}

// withModifyCondition replaces the claim's modify conditions by cond
// (none when ""), keeping the others (Resizing ...). csi-resizer's modify
// controller sets them so, and Kubernetes' e2e framework waits for them:
// ModifyingVolume while a call is under way, ModifyVolumeError with the
// error after a failed one (WaitForPersistentVolumeClaimModificationFailure),
// neither once the class is applied. An unchanged condition keeps its
// transition time, so a retry writes nothing.
func withModifyCondition(conds []v1.PersistentVolumeClaimCondition, cond v1.PersistentVolumeClaimConditionType, msg string) []v1.PersistentVolumeClaimCondition {
	var out []v1.PersistentVolumeClaimCondition
	next := v1.PersistentVolumeClaimCondition{Type: cond, Status: v1.ConditionTrue, Message: msg, LastTransitionTime: metav1.Now()}
	for _, c := range conds {
		switch {
		case c.Type == cond && c.Message == msg:
			next = c
		case c.Type != v1.PersistentVolumeClaimVolumeModifyingVolume && c.Type != v1.PersistentVolumeClaimVolumeModifyVolumeError:
			out = append(out, c)
		}
	}
	if cond != "" {
		out = append(out, next)
	}
	return out
}

// patchVolumeClass sets the volume's spec.volumeAttributesClassName with a
// merge patch of that one field, guarded by the resourceVersion it read,
// so that a concurrent write elsewhere in the volume is never undone.
func patchVolumeClass(ctx context.Context, c *Controller, pv *v1.PersistentVolume, class string) error {
	if ptr.Deref(pv.Spec.VolumeAttributesClassName, "") == class {
		return nil
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": pv.ResourceVersion},
		"spec":     map[string]any{"volumeAttributesClassName": class},
	})
	if err != nil {
		return err
	}
	_, err = c.kube.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
