package provisioner

import (
	"context"
	"fmt"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

const (
	regionKey = "topology.kubernetes.io/region"
	zoneKey   = "topology.kubernetes.io/zone"
	// EBS's shape (the ebs-keys personality): nodes report a vendor zone
	// key and an OS key beside zoneKey; volumes and snapshots carry
	// zoneKey alone.
	vendorZoneKey = "topology.zonepath.csi.dev/zone"
	osKey         = "kubernetes.io/os"
	ns            = "ns"
	snapUID       = types.UID("snap-uid")
)

// term builds a TopologySelectorTerm from key, values... pairs:
// term(zoneKey, "a", "b", regionKey, "r1") is {zone in (a,b), region in (r1)}.
// A key is told from a value by its "/", which label values cannot hold.
func term(kv ...string) v1.TopologySelectorTerm {
	var t v1.TopologySelectorTerm
	for _, s := range kv {
		if strings.Contains(s, "/") {
			t.MatchLabelExpressions = append(t.MatchLabelExpressions, v1.TopologySelectorLabelRequirement{Key: s})
			continue
		}
		last := &t.MatchLabelExpressions[len(t.MatchLabelExpressions)-1]
		last.Values = append(last.Values, s)
	}
	return t
}

func terms(ts ...v1.TopologySelectorTerm) []v1.TopologySelectorTerm { return ts }

func storageClass(mode storagev1.VolumeBindingMode, allowed []v1.TopologySelectorTerm) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "sc", UID: "sc-uid"},
		Provisioner:       "zonepath.csi.dev",
		VolumeBindingMode: &mode,
		AllowedTopologies: allowed,
		Parameters:        map[string]string{"p": "v"},
	}
}

var snapshotGroup = snapshotapi.Group

func snapshotDataSource(name string) *v1.TypedLocalObjectReference {
	return &v1.TypedLocalObjectReference{APIGroup: &snapshotGroup, Kind: "VolumeSnapshot", Name: name}
}

func claim(ds *v1.TypedLocalObjectReference) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "restore", Namespace: ns, UID: "claim-uid"},
		Spec:       v1.PersistentVolumeClaimSpec{DataSource: ds, StorageClassName: ptr("sc")},
	}
}

func ptr[T any](v T) *T { return &v }

func boundSnapshot(name, content string) *snapv1.VolumeSnapshot {
	s := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: snapUID}}
	if content != "" {
		s.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: &content}
	}
	return s
}

// content is a VolumeSnapshotContent as the API serves it, bound to
// ns/snap, cut (status.snapshotHandle set), with nodeAffinity when affinity
// is not nil.
func content(name string, affinity []v1.TopologySelectorTerm) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1",
		"kind":       "VolumeSnapshotContent",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"driver":            "zonepath.csi.dev",
			"volumeSnapshotRef": map[string]any{"namespace": ns, "name": "snap", "uid": string(snapUID)},
		},
		"status": map[string]any{"snapshotHandle": "snap-handle", "readyToUse": true},
	}}
	if affinity != nil {
		list := make([]any, len(affinity))
		for i := range affinity {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&affinity[i])
			if err != nil {
				panic(err) // fixtures are static; a failure is a bug in the test
			}
			list[i] = m
		}
		u.Object["spec"].(map[string]any)["nodeAffinity"] = list
	}
	return u
}

// uncut is c before the snapshotter has cut its snapshot: no status.
func uncut(c *unstructured.Unstructured) *unstructured.Unstructured {
	unstructured.RemoveNestedField(c.Object, "status")
	return c
}

// preProvisioned is c made by an admin for an existing snapshot: its
// handle is in spec.source and nobody writes its status yet.
func preProvisioned(c *unstructured.Unstructured) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(c.Object, "snap-handle", "spec", "source", "snapshotHandle")
	return uncut(c)
}

// fakeLookup is a snapshotapi.Reader serving fixed objects; it counts
// reads, so a test can prove that a path reads nothing.
type fakeLookup struct {
	snapshots map[string]*snapv1.VolumeSnapshot
	contents  map[string]*unstructured.Unstructured
	reads     int
}

var _ snapshotapi.Reader = (*fakeLookup)(nil)

func (f *fakeLookup) VolumeSnapshot(_ context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	f.reads++
	s, ok := f.snapshots[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(snapv1.Resource("volumesnapshots"), name)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	return &unstructured.Unstructured{Object: m}, err
}

func (f *fakeLookup) VolumeSnapshotContent(_ context.Context, name string) (*unstructured.Unstructured, error) {
	f.reads++
	if c, ok := f.contents[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(snapv1.Resource("volumesnapshotcontents"), name)
}

func (f *fakeLookup) ReferenceGrants(context.Context, string) ([]*unstructured.Unstructured, error) {
	return nil, fmt.Errorf("fakeLookup: no ReferenceGrants (cross-namespace data sources are off)")
}

// wrap is the wrapper over delegate reading through reader, writing pins
// to the claims of kube (a new fake when nil), over fixtureNodes.
func wrap(delegate controller.Provisioner, reader snapshotapi.Reader, kube *fake.Clientset) *Provisioner {
	return wrapOn(delegate, reader, kube, fixtureNodes())
}

func wrapOn(delegate controller.Provisioner, reader snapshotapi.Reader, kube *fake.Clientset, nodes DriverNodes) *Provisioner {
	if kube == nil {
		kube = fake.NewClientset()
	}
	return New(delegate, Options{Resolver: snapshotapi.Resolver{Reader: reader}, Claims: kube.CoreV1(), Nodes: nodes})
}

// fixtureNodes are nodes of zonepath.csi.dev in the places the test
// topologies name: r1/a, r1/b, r1/c and r2/d.
func fixtureNodes() DriverNodes {
	return driverNodes("zonepath.csi.dev",
		labelled("r1-a", regionKey, "r1", zoneKey, "a"), labelled("r1-b", regionKey, "r1", zoneKey, "b"),
		labelled("r1-c", regionKey, "r1", zoneKey, "c"), labelled("r2-d", regionKey, "r2", zoneKey, "d"))
}

// fakeNode is a Node and the drivers its CSINode lists (none: no CSINode).
type fakeNode struct {
	node    *v1.Node
	drivers []string
}

// labelled is a node named name running zonepath.csi.dev, labelled with
// key, value pairs.
func labelled(name string, kv ...string) fakeNode {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return fakeNode{node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, drivers: []string{"zonepath.csi.dev"}}
}

// driverNodes serves nodes through listers as the informers would.
func driverNodes(driver string, nodes ...fakeNode) DriverNodes {
	csiNodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	kubeNodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range nodes {
		mustAdd(kubeNodes, n.node)
		if n.drivers == nil {
			continue
		}
		c := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n.node.Name}}
		for _, d := range n.drivers {
			c.Spec.Drivers = append(c.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: n.node.Name})
		}
		mustAdd(csiNodes, c)
	}
	return DriverNodes{Driver: driver, CSINodes: storagelisters.NewCSINodeLister(csiNodes), Nodes: corelisters.NewNodeLister(kubeNodes)}
}

func mustAdd(i cache.Indexer, obj any) {
	if err := i.Add(obj); err != nil {
		panic(err) // fixtures are static; a failure is a bug in the test
	}
}

// recorder is a delegate provisioner that records what it received.
type recorder struct {
	calls   int
	options controller.ProvisionOptions
}

func (r *recorder) Provision(_ context.Context, o controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	r.calls++
	r.options = o
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}}, controller.ProvisioningFinished, nil
}

func (r *recorder) Delete(context.Context, *v1.PersistentVolume) error {
	return fmt.Errorf("recorder: Delete not expected")
}
