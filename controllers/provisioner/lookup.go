package provisioner

import (
	"context"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// Lookup reads what narrowing needs. The content is unstructured because
// the typed client/v8 structs do not know spec.nodeAffinity and would drop
// it (see package snapshotapi).
type Lookup interface {
	VolumeSnapshot(ctx context.Context, namespace, name string) (*snapv1.VolumeSnapshot, error)
	VolumeSnapshotContent(ctx context.Context, name string) (*unstructured.Unstructured, error)
}

// APILookup is a Lookup that reads from the API server on every call, a
// quorum read (no resourceVersion), never from an informer cache.
//
// Narrowing decides where a volume is created, for good. A cached content
// can be older than what the snapshotter has just written: without the
// nodeAffinity it recorded when it cut the snapshot, narrowing would pass
// the class through, and upstream, which reads the VolumeSnapshot live a
// moment later and finds it ready, would create the volume anywhere the
// class allows. Confirming a cached copy is current would cost the same
// GET, so there is no cache. The price is two GETs per attempt of an
// Immediate-binding restore, which upstream's provisioner makes live for
// every restore anyway (getSnapshotSource); in exchange the process no
// longer watches every snapshot and content in the cluster.
type APILookup struct {
	Snapshots snapclientset.Interface
	Contents  dynamic.Interface
}

// VolumeSnapshot implements Lookup.
func (l APILookup) VolumeSnapshot(ctx context.Context, namespace, name string) (*snapv1.VolumeSnapshot, error) {
	return l.Snapshots.SnapshotV1().VolumeSnapshots(namespace).Get(ctx, name, metav1.GetOptions{})
}

// VolumeSnapshotContent implements Lookup.
func (l APILookup) VolumeSnapshotContent(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return l.Contents.Resource(snapshotapi.VolumeSnapshotContents).Get(ctx, name, metav1.GetOptions{})
}

// snapshotRef names the VolumeSnapshot a claim is restored from.
type snapshotRef struct{ namespace, name string }

func (r snapshotRef) String() string { return r.namespace + "/" + r.name }

// snapshotSource returns the VolumeSnapshot a claim restores, reading
// dataSource before dataSourceRef as upstream's provisioner does, so both
// always act on the same source. A cross-namespace dataSourceRef is not
// narrowed: upstream checks its ReferenceGrant only after this wrapper
// runs, and an event naming a foreign snapshot's content and topology
// would leak it to a claim that may not be granted access.
func snapshotSource(claim *v1.PersistentVolumeClaim) (snapshotRef, bool) {
	if ds := claim.Spec.DataSource; ds != nil {
		return snapshotRef{claim.Namespace, ds.Name}, isSnapshot(ds.APIGroup, ds.Kind)
	}
	ref := claim.Spec.DataSourceRef
	if ref == nil || (ref.Namespace != nil && *ref.Namespace != "" && *ref.Namespace != claim.Namespace) {
		return snapshotRef{}, false
	}
	return snapshotRef{claim.Namespace, ref.Name}, isSnapshot(ref.APIGroup, ref.Kind)
}

func isSnapshot(group *string, kind string) bool {
	return kind == "VolumeSnapshot" && group != nil && *group == snapshotapi.Group
}
