package snapshotapi

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"
)

// TestReadersAgree: the scheduler's Listers and the provisioner's Live
// reader give the same objects, and the same "not found", for the same
// cluster, so the resolver answers both alike.
func TestReadersAgree(t *testing.T) {
	objs := []*unstructured.Unstructured{
		object(t, "apiVersion: snapshot.storage.k8s.io/v1\n"+snapNS),
		object(t, "apiVersion: snapshot.storage.k8s.io/v1\n"+contentNS),
		object(t, "apiVersion: gateway.networking.k8s.io/v1beta1\n"+grant("ns", "")),
	}
	var runtimeObjs []runtime.Object
	indexers := map[string]cache.Indexer{}
	for _, o := range objs {
		runtimeObjs = append(runtimeObjs, o)
		if indexers[o.GetKind()] == nil {
			indexers[o.GetKind()] = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		}
		if err := indexers[o.GetKind()].Add(o); err != nil {
			t.Fatal(err)
		}
	}
	lister := func(kind, resource string) cache.GenericLister {
		idx := indexers[kind]
		return cache.NewGenericLister(idx, schema.GroupResource{Resource: resource})
	}
	readers := map[string]Reader{
		"Listers": Listers{Snapshots: lister("VolumeSnapshot", "volumesnapshots"), Contents: lister("VolumeSnapshotContent", "volumesnapshotcontents"),
			Grants: lister("ReferenceGrant", "referencegrants")},
		"Live": Live{Client: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			ReferenceGrants: "ReferenceGrantList"}, runtimeObjs...)},
	}
	ctx := context.Background()
	for name, r := range readers {
		t.Run(name, func(t *testing.T) {
			if u, err := r.VolumeSnapshot(ctx, "ns", "snap"); err != nil || u.GetName() != "snap" {
				t.Errorf("VolumeSnapshot ns/snap = %v, %v", u, err)
			}
			if _, err := r.VolumeSnapshot(ctx, "foreign", "snap"); !apierrors.IsNotFound(err) {
				t.Errorf("VolumeSnapshot foreign/snap: error %v, want not found", err)
			}
			if u, err := r.VolumeSnapshotContent(ctx, "c1"); err != nil || u.GetName() != "c1" {
				t.Errorf("VolumeSnapshotContent c1 = %v, %v", u, err)
			}
			if _, err := r.VolumeSnapshotContent(ctx, "c9"); !apierrors.IsNotFound(err) {
				t.Errorf("VolumeSnapshotContent c9: error %v, want not found", err)
			}
			if grants, err := r.ReferenceGrants(ctx, "foreign"); err != nil || len(grants) != 1 {
				t.Errorf("ReferenceGrants of foreign = %v, %v; want the one grant", grants, err)
			}
			if grants, err := r.ReferenceGrants(ctx, "ns"); err != nil || len(grants) != 0 {
				t.Errorf("ReferenceGrants of ns = %v, %v; want none", grants, err)
			}
		})
	}
	if _, err := (Listers{}).ReferenceGrants(ctx, "foreign"); err == nil {
		t.Error("Listers without a grant informer must refuse, not answer \"no grant\"")
	}
}
