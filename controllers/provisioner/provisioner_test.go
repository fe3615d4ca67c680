package provisioner

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

const (
	immediate = storagev1.VolumeBindingImmediate
	wffc      = storagev1.VolumeBindingWaitForFirstConsumer
)

// Topologies of the KEP-5943 test plan: a snapshot taken in region r1
// (zones a or b) or in the single zone r2/d, classes by zone.
var (
	snapR1      = terms(term(regionKey, "r1"))
	snapAorD    = terms(term(regionKey, "r1", zoneKey, "a"), term(regionKey, "r2", zoneKey, "d"))
	classAB     = terms(term(zoneKey, "a", "b"))
	classC      = terms(term(zoneKey, "c"))
	r1ZonesAB   = terms(term(regionKey, "r1", zoneKey, "a", "b"))
	r1ZoneAOnly = terms(term(regionKey, "r1", zoneKey, "a"))
)

type provisionCase struct {
	name     string
	gateOff  bool
	claim    *v1.PersistentVolumeClaim
	class    *storagev1.StorageClass
	node     string
	snapshot *snapv1.VolumeSnapshot
	content  *unstructured.Unstructured

	// want is the delegate's allowedTopologies; unchanged means the
	// delegate must get the caller's very StorageClass pointer.
	want      []v1.TopologySelectorTerm
	unchanged bool
	// wantErr are substrings of the error; the delegate must not run.
	wantErr   []string
	wantReads int
	// wantPin: the claim is pinned to what the delegate got.
	wantPin bool
	// nodes are the driver's nodes; nil means fixtureNodes.
	nodes []fakeNode
}

func provisionCases() []provisionCase {
	restore := claim(snapshotDataSource("snap"))
	bound := boundSnapshot("snap", "snapcontent-x")
	return []provisionCase{
		{name: "class zone and snapshot region combine", claim: restore, class: storageClass(immediate, classAB),
			snapshot: bound, content: content("snapcontent-x", snapR1), want: r1ZonesAB, wantReads: 2, wantPin: true},
		{name: "per-segment terms are kept apart", claim: restore, class: storageClass(immediate, classAB),
			snapshot: bound, content: content("snapcontent-x", snapAorD), want: r1ZoneAOnly, wantReads: 2, wantPin: true},
		{name: "class without allowedTopologies takes the snapshot terms", claim: restore, class: storageClass(immediate, nil),
			snapshot: bound, content: content("snapcontent-x", snapAorD), want: snapAorD, wantReads: 2, wantPin: true},
		{name: "dataSourceRef is read like dataSource", claim: withRef(snapshotDataSource("snap"), nil), class: storageClass(immediate, classAB),
			snapshot: bound, content: content("snapcontent-x", snapR1), want: r1ZonesAB, wantReads: 2, wantPin: true},
		{name: "dataSourceRef wins over dataSource (Kubernetes' precedence)", claim: withBoth(snapshotDataSource("other"), snapshotDataSource("snap")), class: storageClass(immediate, classAB),
			snapshot: bound, content: content("snapcontent-x", snapR1), want: r1ZonesAB, wantReads: 2, wantPin: true},
		{name: "empty intersection names both objects", claim: restore, class: storageClass(immediate, classC),
			snapshot: bound, content: content("snapcontent-x", snapAorD), wantReads: 2,
			wantErr: []string{"do not intersect", `VolumeSnapshotContent "snapcontent-x"`, `VolumeSnapshot "ns/snap"`, `StorageClass "sc"`,
				"{topology.kubernetes.io/region in (r1), topology.kubernetes.io/zone in (a)}", "[{topology.kubernetes.io/zone in (c)}]"}},
		{name: "ebs-keys: a vendor-key class disjoint from the snapshot's zone is refused, naming both objects", claim: restore,
			class: storageClass(immediate, terms(term(vendorZoneKey, "zone-c"))), nodes: ebsNodes(),
			snapshot: bound, content: content("snapcontent-x", terms(term(zoneKey, "zone-a"))), wantReads: 2,
			wantErr: []string{"do not intersect", `VolumeSnapshotContent "snapcontent-x"`, `VolumeSnapshot "ns/snap"`, `StorageClass "sc"`,
				"[{topology.kubernetes.io/zone in (zone-a), topology.zonepath.csi.dev/zone in (zone-c)}]", `no node of driver "zonepath.csi.dev" carries`}},
		{name: "ebs-keys: a vendor-key class is narrowed to the snapshot's zone as its nodes carry it", claim: restore,
			class: storageClass(immediate, terms(term(vendorZoneKey, "zone-a", "zone-c"))), nodes: ebsNodes(),
			snapshot: bound, content: content("snapcontent-x", terms(term(zoneKey, "zone-a"))),
			want: terms(term(zoneKey, "zone-a", vendorZoneKey, "zone-a")), wantReads: 2, wantPin: true},
		{name: "ebs-keys: no node runs the driver yet", claim: restore,
			class: storageClass(immediate, terms(term(vendorZoneKey, "zone-a"))), nodes: []fakeNode{},
			snapshot: bound, content: content("snapcontent-x", terms(term(zoneKey, "zone-a"))), wantReads: 2,
			wantErr: []string{`VolumeSnapshotContent "snapcontent-x" (VolumeSnapshot "ns/snap") and StorageClass "sc" intersect only in`, `no CSINode lists driver "zonepath.csi.dev" yet`}},
		{name: "no nodeAffinity", claim: restore, class: storageClass(immediate, classAB),
			snapshot: bound, content: content("snapcontent-x", nil), unchanged: true, wantReads: 2, wantPin: true},
		{name: "empty nodeAffinity is no constraint", claim: restore, class: storageClass(immediate, classC),
			snapshot: bound, content: content("snapcontent-x", terms()), unchanged: true, wantReads: 2, wantPin: true},
		{name: "selected node (WaitForFirstConsumer)", claim: restore, class: storageClass(wffc, classC), node: "node-1",
			snapshot: bound, content: content("snapcontent-x", snapAorD), unchanged: true},
		{name: "clone", claim: claim(&v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}), class: storageClass(immediate, classC),
			unchanged: true},
		{name: "no data source", claim: claim(nil), class: storageClass(immediate, classC), unchanged: true},
		{name: "VolumeSnapshot of another group is upstream's to reject", claim: claim(&v1.TypedLocalObjectReference{APIGroup: ptr("example.com"), Kind: "VolumeSnapshot", Name: "snap"}),
			class: storageClass(immediate, classC), unchanged: true},
		{name: "cross-namespace dataSourceRef is refused, nothing read, nothing named", claim: withRef(snapshotDataSource("snap"), ptr("foreign")), class: storageClass(immediate, classC),
			snapshot: bound, content: content("snapcontent-x", snapAorD),
			wantErr: []string{`PersistentVolumeClaim "ns/restore": its dataSourceRef names a VolumeSnapshot in another namespace, which is refused`}},
		{name: "gate off", gateOff: true, claim: restore, class: storageClass(immediate, classC),
			snapshot: bound, content: content("snapcontent-x", snapAorD), unchanged: true},
		{name: "snapshot missing", claim: restore, class: storageClass(immediate, classAB), wantReads: 1,
			wantErr: []string{`VolumeSnapshot "ns/snap" not found`}},
		{name: "snapshot unbound", claim: restore, class: storageClass(immediate, classAB), snapshot: boundSnapshot("snap", ""), wantReads: 1,
			wantErr: []string{`VolumeSnapshot "ns/snap" is not bound`}},
		{name: "content missing", claim: restore, class: storageClass(immediate, classAB), snapshot: bound, wantReads: 2,
			wantErr: []string{`VolumeSnapshotContent "snapcontent-x" of VolumeSnapshot "ns/snap"`, "not found"}},
		{name: "content bound to another snapshot", claim: restore, class: storageClass(immediate, classAB),
			snapshot: boundSnapshot("snap", "snapcontent-x"), content: rebound(content("snapcontent-x", snapR1), "other"), wantReads: 2,
			wantErr: []string{`VolumeSnapshotContent "snapcontent-x" of VolumeSnapshot "ns/snap" is bound to VolumeSnapshot "ns/other"`}},
		{name: "content without a snapshot handle yet is not known", claim: restore, class: storageClass(immediate, classAB),
			snapshot: bound, content: uncut(content("snapcontent-x", nil)), wantReads: 2,
			wantErr: []string{`VolumeSnapshotContent "snapcontent-x" of VolumeSnapshot "ns/snap" has no snapshot handle yet`}},
		{name: "pre-provisioned content is known by its spec handle", claim: restore, class: storageClass(immediate, classAB),
			snapshot: bound, content: preProvisioned(content("snapcontent-x", snapR1)), want: r1ZonesAB, wantReads: 2, wantPin: true},
		{name: "malformed nodeAffinity", claim: restore, class: storageClass(immediate, classAB),
			snapshot: bound, content: content("snapcontent-x", terms(v1.TopologySelectorTerm{})), wantReads: 2,
			wantErr: []string{`VolumeSnapshotContent "snapcontent-x"`, "must not be empty"}},
	}
}

// withBoth sets dataSource and dataSourceRef, which the API server keeps
// equal; only a hand-made object differs, and dataSourceRef counts.
func withBoth(ds, ref *v1.TypedLocalObjectReference) *v1.PersistentVolumeClaim {
	c := withRef(ref, nil)
	c.Spec.DataSource = ds
	return c
}

func withRef(ds *v1.TypedLocalObjectReference, namespace *string) *v1.PersistentVolumeClaim {
	c := claim(nil)
	c.Spec.DataSourceRef = &v1.TypedObjectReference{APIGroup: ds.APIGroup, Kind: ds.Kind, Name: ds.Name, Namespace: namespace}
	return c
}

func rebound(c *unstructured.Unstructured, snapshot string) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(c.Object, snapshot, "spec", "volumeSnapshotRef", "name")
	return c
}

func TestProvision(t *testing.T) {
	for _, tc := range provisionCases() {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, !tc.gateOff)
			lookup := &fakeLookup{snapshots: map[string]*snapv1.VolumeSnapshot{}, contents: map[string]*unstructured.Unstructured{}}
			if tc.snapshot != nil {
				lookup.snapshots[ns+"/"+tc.snapshot.Name] = tc.snapshot
			}
			if tc.content != nil {
				lookup.contents[tc.content.GetName()] = tc.content
			}
			delegate := &recorder{}
			kube := fake.NewClientset(tc.claim)
			class := tc.class
			before := class.DeepCopy()
			options := controller.ProvisionOptions{StorageClass: class, PVC: tc.claim, PVName: "pvc-1", SelectedNodeName: tc.node}

			nodes := fixtureNodes()
			if tc.nodes != nil {
				nodes = driverNodes("zonepath.csi.dev", tc.nodes...)
			}
			_, state, err := wrapOn(delegate, lookup, kube, nodes).Provision(context.Background(), options)

			checkOutcome(t, tc, delegate, state, err)
			if !reflect.DeepEqual(class, before) {
				t.Errorf("the caller's StorageClass was modified:\n got %+v\nwant %+v", class, before)
			}
			if lookup.reads != tc.wantReads {
				t.Errorf("lookup reads = %d, want %d", lookup.reads, tc.wantReads)
			}
			checkPinned(t, kube, tc, delegate)
		})
	}
}

// checkPinned: the claim's pin holds the allowedTopologies the delegate
// got, or there is none.
func checkPinned(t *testing.T, kube *fake.Clientset, tc provisionCase, delegate *recorder) {
	t.Helper()
	claim, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), tc.claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pinned, ok, err := snapshotapi.Pin(claim)
	if err != nil || ok != tc.wantPin {
		t.Fatalf("pin %v present %v (err %v), want present %v", pinned, ok, err, tc.wantPin)
	}
	if ok && !sameTerms(pinned, delegate.options.StorageClass.AllowedTopologies) {
		t.Errorf("pin %v, but the delegate got allowedTopologies %v", formatTerms(pinned), formatTerms(delegate.options.StorageClass.AllowedTopologies))
	}
}

func checkOutcome(t *testing.T, tc provisionCase, delegate *recorder, state controller.ProvisioningState, err error) {
	t.Helper()
	if tc.wantErr != nil {
		checkError(t, err, tc.wantErr)
		if state != controller.ProvisioningNoChange || delegate.calls != 0 {
			t.Fatalf("state %q, delegate called %d times; want NoChange and no call", state, delegate.calls)
		}
		return
	}
	if err != nil || delegate.calls != 1 {
		t.Fatalf("Provision: err %v, delegate called %d times; want success and one call", err, delegate.calls)
	}
	got := delegate.options.StorageClass
	if tc.unchanged {
		if got != tc.class {
			t.Fatalf("delegate got a different StorageClass %+v, want the caller's unchanged", got)
		}
		return
	}
	if got == tc.class {
		t.Fatal("delegate got the caller's StorageClass object; a narrowed copy was expected")
	}
	if diff := cmp.Diff(tc.want, got.AllowedTopologies); diff != "" {
		t.Errorf("delegate allowedTopologies = %v, want %v (-want +got):\n%s", formatTerms(got.AllowedTopologies), formatTerms(tc.want), diff)
	}
	narrowedBack := got.DeepCopy()
	narrowedBack.AllowedTopologies = tc.class.AllowedTopologies
	if !reflect.DeepEqual(narrowedBack, tc.class) {
		t.Errorf("delegate StorageClass differs in more than allowedTopologies: %+v", got)
	}
	if delegate.options.PVC != tc.claim || delegate.options.PVName != "pvc-1" {
		t.Errorf("delegate options changed beyond StorageClass: %+v", delegate.options)
	}
}

func checkError(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Provision succeeded, want an error containing %q", want)
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

// TestDisjointErrorIsTyped lets callers (and tests of a future event
// reason) tell an empty intersection from a lookup failure.
func TestDisjointErrorIsTyped(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	lookup := &fakeLookup{
		snapshots: map[string]*snapv1.VolumeSnapshot{"ns/snap": boundSnapshot("snap", "c")},
		contents:  map[string]*unstructured.Unstructured{"c": content("c", snapR1)},
	}
	options := controller.ProvisionOptions{StorageClass: storageClass(immediate, terms(term(regionKey, "r2"))), PVC: claim(snapshotDataSource("snap"))}
	_, _, err := wrap(&recorder{}, lookup, nil).Provision(context.Background(), options)
	var disjoint *DisjointError
	if !errors.As(err, &disjoint) || disjoint.Content != "c" || disjoint.Snapshot != "ns/snap" || disjoint.StorageClass != "sc" {
		t.Fatalf("error %v (%T), want a *DisjointError naming c, ns/snap and sc", err, err)
	}
}
