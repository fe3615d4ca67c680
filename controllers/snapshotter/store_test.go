package snapshotter

import (
	"fmt"
	"strconv"
	"sync/atomic"

	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// shareStore makes the typed snapshot clientset read and write the dynamic
// fake's objects, so that upstream's typed writes (annotations, status) and
// the Snapshotter's unstructured ones (nodeAffinity, the pinned topology)
// meet in one object, as they do on an API server. Typed objects are
// converted at the boundary, so the typed client drops nodeAffinity on read
// exactly as client/v8 does against a real server, and keeps it on the
// server side. Every write gets a new resourceVersion, and a write that
// carries an older one is a conflict, as the API server checks it.
func shareStore(typed *snapfake.Clientset, dyn *dynamicfake.FakeDynamicClient) {
	tracker := &rvTracker{ObjectTracker: dyn.Tracker()}
	react := clienttesting.ObjectReaction(tracker)
	dyn.PrependReactor("*", "*", react)
	typed.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		a, err := tracker.untyped(a)
		if err != nil {
			return true, nil, err
		}
		handled, obj, err := react(a)
		if err != nil || obj == nil {
			return handled, obj, err
		}
		obj, err = typedObject(obj, a.GetResource())
		return handled, obj, err
	})
	typed.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := a.(clienttesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			obj, err := typedObject(e.Object, a.GetResource())
			if err != nil {
				return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}, true
			}
			e.Object = obj
			return e, true
		}), nil
	})
}

// kinds are the typed snapshot objects the store converts, by resource.
var kinds = map[string]struct {
	kind       string
	item, list func() runtime.Object
}{
	"volumesnapshotcontents": {"VolumeSnapshotContent",
		func() runtime.Object { return &crdv1.VolumeSnapshotContent{} }, func() runtime.Object { return &crdv1.VolumeSnapshotContentList{} }},
	"volumesnapshotclasses": {"VolumeSnapshotClass",
		func() runtime.Object { return &crdv1.VolumeSnapshotClass{} }, func() runtime.Object { return &crdv1.VolumeSnapshotClassList{} }},
	"volumesnapshots": {"VolumeSnapshot",
		func() runtime.Object { return &crdv1.VolumeSnapshot{} }, func() runtime.Object { return &crdv1.VolumeSnapshotList{} }},
}

// untyped converts the object of a typed create or update into the
// unstructured form the store holds. A status update changes only the
// status of the stored object, and any other update keeps the stored
// status, as the API server does for a resource with a status subresource.
func (t *rvTracker) untyped(a clienttesting.Action) (clienttesting.Action, error) {
	switch a := a.(type) {
	case clienttesting.CreateActionImpl:
		u, err := toUnstructured(a.Object, a.GetResource())
		a.Object = u
		return a, err
	case clienttesting.UpdateActionImpl:
		u, err := toUnstructured(a.Object, a.GetResource())
		if err != nil {
			return nil, err
		}
		stored, err := t.Get(a.GetResource(), a.GetNamespace(), u.GetName())
		if err != nil {
			return nil, err
		}
		merged := stored.(*unstructured.Unstructured).DeepCopy()
		if a.GetSubresource() == "status" {
			merged.Object["status"] = u.Object["status"]
			merged.SetResourceVersion(u.GetResourceVersion())
		} else {
			u.Object["status"] = merged.Object["status"]
			merged = u
		}
		a.Object = merged
		return a, nil
	}
	return a, nil
}

func toUnstructured(obj runtime.Object, gvr schema.GroupVersionResource) (*unstructured.Unstructured, error) {
	k, ok := kinds[gvr.Resource]
	if !ok {
		return nil, fmt.Errorf("store: no kind for %s", gvr.Resource)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(k.kind)
	return u, nil
}

// typedObject converts what the store returns for resource (an object or
// a list) into client/v8's typed structs.
func typedObject(obj runtime.Object, gvr schema.GroupVersionResource) (runtime.Object, error) {
	k, ok := kinds[gvr.Resource]
	if !ok {
		return nil, fmt.Errorf("store: no kind for %s", gvr.Resource)
	}
	switch u := obj.(type) {
	case *unstructured.Unstructured:
		out := k.item()
		return out, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
	case *unstructured.UnstructuredList:
		items := make([]runtime.Object, len(u.Items))
		for i := range u.Items {
			items[i] = k.item()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Items[i].Object, items[i]); err != nil {
				return nil, err
			}
		}
		out := k.list()
		if err := meta.SetList(out, items); err != nil {
			return nil, err
		}
		out.(metav1.ListMetaAccessor).GetListMeta().SetResourceVersion(u.GetResourceVersion())
		return out, nil
	}
	return obj, nil
}

// rvTracker gives every write a new metadata.resourceVersion and refuses
// a write carrying another one than the stored object's, as the API
// server does. The fake's tracker keeps the writer's version, so
// upstream's informer filter would take every write for a resync and
// requeue at once, hiding the backoff the tests check, and a guarded
// patch could never conflict.
type rvTracker struct {
	clienttesting.ObjectTracker
	rv atomic.Int64
}

func (t *rvTracker) bump(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetResourceVersion(strconv.FormatInt(100+t.rv.Add(1), 10))
	return nil
}

// precondition fails a write of obj whose resourceVersion is set and
// differs from the stored object's.
func (t *rvTracker) precondition(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	m, err := meta.Accessor(obj)
	if err != nil || m.GetResourceVersion() == "" {
		return err
	}
	stored, err := t.ObjectTracker.Get(gvr, ns, m.GetName())
	if err != nil {
		return err
	}
	sm, err := meta.Accessor(stored)
	if err != nil {
		return err
	}
	if sm.GetResourceVersion() != m.GetResourceVersion() {
		return apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			fmt.Errorf("the object has been modified: resourceVersion %s, stored %s", m.GetResourceVersion(), sm.GetResourceVersion()))
	}
	return nil
}

func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	if err := t.bump(obj); err != nil {
		return err
	}
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	return t.guarded(gvr, obj, ns, func() error { return t.ObjectTracker.Update(gvr, obj, ns, opts...) })
}

func (t *rvTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return t.guarded(gvr, obj, ns, func() error { return t.ObjectTracker.Patch(gvr, obj, ns, opts...) })
}

// guarded writes obj with write once its precondition holds, with a new
// resourceVersion.
func (t *rvTracker) guarded(gvr schema.GroupVersionResource, obj runtime.Object, ns string, write func() error) error {
	if err := t.precondition(gvr, obj, ns); err != nil {
		return err
	}
	if err := t.bump(obj); err != nil {
		return err
	}
	return write()
}
