package chaos

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/objects"
)

// The kinds of object the workload makes or reads.
const (
	kindPod           = "Pod"
	kindClaim         = "PersistentVolumeClaim"
	kindPV            = "PersistentVolume"
	kindSnapshot      = "VolumeSnapshot"
	kindContent       = "VolumeSnapshotContent"
	kindSnapshotClass = "VolumeSnapshotClass"
	kindStorageClass  = "StorageClass"
	kindAttachment    = "VolumeAttachment"
)

// resources are the kinds' resources; the namespaced ones live in
// Namespace.
var resources = map[string]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	kindPod:           {schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
	kindClaim:         {schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, true},
	kindPV:            {schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, false},
	kindSnapshot:      {snapshotapi.VolumeSnapshots, true},
	kindContent:       {snapshotapi.VolumeSnapshotContents, false},
	kindSnapshotClass: {snapshotapi.VolumeSnapshotClasses, false},
	kindStorageClass:  {schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}, false},
	kindAttachment:    {schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"}, false},
}

// resource is the client of a kind's objects.
func (a *api) resource(kind string) dynamic.ResourceInterface {
	r := resources[kind]
	if r.namespaced {
		return a.dyn.Resource(r.gvr).Namespace(Namespace)
	}
	return a.dyn.Resource(r.gvr)
}

// inventory lists every API object the workload made, or that stands
// for what it made: PersistentVolumes, VolumeSnapshotContents and
// VolumeAttachments of the driver, the claims, snapshots and pods of
// Namespace, and the classes named with prefix. After the workload's
// deletions, all of them should be gone.
func (a *api) inventory(ctx context.Context) ([]Object, error) {
	var out []Object
	err := retry(ctx, func(ctx context.Context) error {
		out = nil
		for _, kind := range []string{kindPV, kindContent, kindAttachment, kindClaim, kindPod, kindSnapshot, kindSnapshotClass, kindStorageClass} {
			list, err := a.resource(kind).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for i := range list.Items {
				if o, ok := audited(kind, &list.Items[i]); ok {
					out = append(out, o)
				}
			}
		}
		return nil
	})
	return out, err
}

// audited is the audit's view of an object of kind, and whether the
// workload made it (or it stands for something the workload made).
func audited(kind string, u *unstructured.Unstructured) (Object, bool) {
	o := Object{Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName(), Deleting: u.GetDeletionTimestamp() != nil,
		Finalizers: u.GetFinalizers(), Annotations: u.GetAnnotations()}
	field := func(path ...string) string {
		s, _, _ := unstructured.NestedString(u.Object, path...)
		return s
	}
	switch kind {
	case kindPV:
		o.Handle, o.Bound = field("spec", "csi", "volumeHandle"), field("status", "phase") == "Bound"
		return o, field("spec", "csi", "driver") == objects.Driver
	case kindContent:
		ready, _, _ := unstructured.NestedBool(u.Object, "status", "readyToUse")
		o.Handle = field("status", "snapshotHandle")
		o.Bound = ready && o.Handle != "" && !o.Deleting
		return o, field("spec", "driver") == objects.Driver
	case kindAttachment:
		return o, field("spec", "attacher") == objects.Driver
	case kindSnapshotClass, kindStorageClass:
		return o, strings.HasPrefix(o.Name, prefix)
	}
	return o, true
}
