package chaos

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/objects"
)

// inventory lists every API object the workload made, or that stands
// for what it made: PersistentVolumes and VolumeSnapshotContents of the
// driver, VolumeAttachments of it, the claims, snapshots and pods of
// Namespace, and the classes named with prefix. After the workload's
// deletions, all of them should be gone.
func (a *api) inventory(ctx context.Context) ([]Object, error) {
	var out []Object
	err := retry(ctx, func(ctx context.Context) error {
		out = nil
		for _, list := range []func(context.Context) ([]Object, error){
			a.listPVs, a.listContents, a.listAttachments, a.listClaims, a.listPods,
			a.listUnstructured(kindSnapshot, a.snapshots()),
			a.listUnstructured(kindSnapshotClass, a.dyn.Resource(snapshotapi.VolumeSnapshotClasses)),
			a.listStorageClasses,
		} {
			objs, err := list(ctx)
			if err != nil {
				return err
			}
			out = append(out, objs...)
		}
		return nil
	})
	return out, err
}

// object is the audit's view of an object's metadata.
func object(kind string, m metav1.Object) Object {
	return Object{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName(), Deleting: m.GetDeletionTimestamp() != nil,
		Finalizers: m.GetFinalizers(), Annotations: m.GetAnnotations()}
}

func (a *api) listPVs(ctx context.Context) ([]Object, error) {
	pvs, err := a.kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []Object
	for i := range pvs.Items {
		pv := &pvs.Items[i]
		if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != objects.Driver {
			continue
		}
		o := object(kindPV, pv)
		o.Handle, o.Bound = pv.Spec.CSI.VolumeHandle, pv.Status.Phase == v1.VolumeBound
		out = append(out, o)
	}
	return out, nil
}

func (a *api) listContents(ctx context.Context) ([]Object, error) {
	list, err := a.contents().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []Object
	for i := range list.Items {
		c := &list.Items[i]
		if driver, _, _ := unstructured.NestedString(c.Object, "spec", "driver"); driver != objects.Driver {
			continue
		}
		o := object(kindContent, c)
		ready, _, _ := unstructured.NestedBool(c.Object, "status", "readyToUse")
		o.Handle = snapshotHandle(c)
		o.Bound = ready && o.Handle != "" && !o.Deleting
		out = append(out, o)
	}
	return out, nil
}

func (a *api) listAttachments(ctx context.Context) ([]Object, error) {
	list, err := a.kube.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []Object
	for i := range list.Items {
		if list.Items[i].Spec.Attacher == objects.Driver {
			out = append(out, object("VolumeAttachment", &list.Items[i]))
		}
	}
	return out, nil
}

func (a *api) listClaims(ctx context.Context) ([]Object, error) {
	list, err := a.kube.CoreV1().PersistentVolumeClaims(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]Object, len(list.Items))
	for i := range list.Items {
		out[i] = object(kindClaim, &list.Items[i])
	}
	return out, nil
}

func (a *api) listPods(ctx context.Context) ([]Object, error) {
	list, err := a.kube.CoreV1().Pods(Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]Object, len(list.Items))
	for i := range list.Items {
		out[i] = object(kindPod, &list.Items[i])
	}
	return out, nil
}

func (a *api) listStorageClasses(ctx context.Context) ([]Object, error) {
	list, err := a.kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []Object
	for i := range list.Items {
		if strings.HasPrefix(list.Items[i].Name, prefix) {
			out = append(out, object(kindStorageClass, &list.Items[i]))
		}
	}
	return out, nil
}

// lister lists unstructured objects.
type lister interface {
	List(context.Context, metav1.ListOptions) (*unstructured.UnstructuredList, error)
}

// listUnstructured lists the objects of kind in r: all of them, or for
// cluster-scoped classes those named with prefix.
func (a *api) listUnstructured(kind string, r lister) func(context.Context) ([]Object, error) {
	return func(ctx context.Context) ([]Object, error) {
		list, err := r.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []Object
		for i := range list.Items {
			o := &list.Items[i]
			if o.GetNamespace() == "" && !strings.HasPrefix(o.GetName(), prefix) {
				continue
			}
			out = append(out, object(kind, o))
		}
		return out, nil
	}
}
