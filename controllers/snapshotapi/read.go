package snapshotapi

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// Listers is a Reader over informer caches, as the scheduler plugin keeps
// them: a scheduling cycle must not wait for the API server.
type Listers struct {
	Snapshots, Contents cache.GenericLister
	// Grants lists ReferenceGrants; nil when cross-namespace data sources
	// are off, and then never asked.
	Grants cache.GenericLister
}

var _ Reader = Listers{}

// VolumeSnapshot implements Reader.
func (l Listers) VolumeSnapshot(_ context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return asUnstructured(l.Snapshots.ByNamespace(namespace).Get(name))
}

// VolumeSnapshotContent implements Reader.
func (l Listers) VolumeSnapshotContent(_ context.Context, name string) (*unstructured.Unstructured, error) {
	return asUnstructured(l.Contents.Get(name))
}

// ReferenceGrants implements Reader.
func (l Listers) ReferenceGrants(_ context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	if l.Grants == nil {
		return nil, errors.New("no ReferenceGrant informer: cross-namespace data sources are off")
	}
	objs, err := l.Grants.ByNamespace(namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		u, err := asUnstructured(o, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func asUnstructured(obj runtime.Object, err error) (*unstructured.Unstructured, error) {
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("informer returned %T, not an unstructured object", obj)
	}
	return u, nil
}

// Live is a Reader that asks the API server on every call, a quorum read
// (no resourceVersion), never a cache: the provisioner decides from it
// where a volume is created for good (see package provisioner).
type Live struct {
	Client dynamic.Interface
}

var _ Reader = Live{}

// VolumeSnapshot implements Reader.
func (l Live) VolumeSnapshot(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return l.Client.Resource(VolumeSnapshots).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
}

// VolumeSnapshotContent implements Reader.
func (l Live) VolumeSnapshotContent(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return l.Client.Resource(VolumeSnapshotContents).Get(ctx, name, metav1.GetOptions{})
}

// ReferenceGrants implements Reader.
func (l Live) ReferenceGrants(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	list, err := l.Client.Resource(ReferenceGrants).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
