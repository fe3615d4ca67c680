package provisioner

import (
	"fmt"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snaplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// Lookup reads what narrowing needs. The content is unstructured because
// the typed client/v8 structs do not know spec.nodeAffinity and would drop
// it (see package snapshotapi).
type Lookup interface {
	VolumeSnapshot(namespace, name string) (*snapv1.VolumeSnapshot, error)
	VolumeSnapshotContent(name string) (*unstructured.Unstructured, error)
}

// Listers is a Lookup over informer caches: a typed VolumeSnapshot lister
// and a dynamic (unstructured) VolumeSnapshotContent lister. Reading from
// caches keeps a busy provisioner off the API server; a cache that lags
// only delays a claim to its next retry, because narrow fails rather than
// guesses when an object is missing.
type Listers struct {
	Snapshots snaplisters.VolumeSnapshotLister
	Contents  cache.GenericLister
}

// VolumeSnapshot implements Lookup.
func (l Listers) VolumeSnapshot(namespace, name string) (*snapv1.VolumeSnapshot, error) {
	return l.Snapshots.VolumeSnapshots(namespace).Get(name)
}

// VolumeSnapshotContent implements Lookup.
func (l Listers) VolumeSnapshotContent(name string) (*unstructured.Unstructured, error) {
	obj, err := l.Contents.Get(name)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("VolumeSnapshotContent %q: cache holds %T, want *unstructured.Unstructured", name, obj)
	}
	return u, nil
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
