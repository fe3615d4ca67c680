package snapshotapi

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// fakeReader serves objects from YAML documents and records what it was
// asked for, so a case can prove that nothing of another namespace is
// read before the rule allows it.
type fakeReader struct {
	objects map[string]*unstructured.Unstructured // kind/namespace/name
	grants  map[string][]*unstructured.Unstructured
	failing string // a kind whose reads fail with a server error
	asked   []string
}

func newReader(t *testing.T, docs ...string) *fakeReader {
	r := &fakeReader{objects: map[string]*unstructured.Unstructured{}, grants: map[string][]*unstructured.Unstructured{}}
	for _, d := range docs {
		u := object(t, d)
		if u.GetKind() == "ReferenceGrant" {
			r.grants[u.GetNamespace()] = append(r.grants[u.GetNamespace()], u)
			continue
		}
		r.objects[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
	}
	return r
}

func (r *fakeReader) get(kind, namespace, name string) (*unstructured.Unstructured, error) {
	r.asked = append(r.asked, kind+"/"+namespace+"/"+name)
	if kind == r.failing {
		return nil, apierrors.NewServiceUnavailable("etcd leader changed")
	}
	if u, ok := r.objects[kind+"/"+namespace+"/"+name]; ok {
		return u, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: Group, Resource: strings.ToLower(kind) + "s"}, name)
}

func (r *fakeReader) VolumeSnapshot(_ context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return r.get("VolumeSnapshot", namespace, name)
}

func (r *fakeReader) VolumeSnapshotContent(_ context.Context, name string) (*unstructured.Unstructured, error) {
	return r.get("VolumeSnapshotContent", "", name)
}

func (r *fakeReader) ReferenceGrants(_ context.Context, namespace string) ([]*unstructured.Unstructured, error) {
	r.asked = append(r.asked, "ReferenceGrant/"+namespace)
	if r.failing == "ReferenceGrant" {
		return nil, apierrors.NewServiceUnavailable(`referencegrants in namespace "foreign": etcd leader changed`)
	}
	return r.grants[namespace], nil
}

// Objects of the cases: snapshot snap in ns (and in foreign), bound to a cut
// content with nodeAffinity zone a.
const (
	snapNS = `kind: VolumeSnapshot
metadata: {namespace: ns, name: snap, uid: u1}
status: {boundVolumeSnapshotContentName: c1}`
	contentNS = `kind: VolumeSnapshotContent
metadata: {name: c1}
spec:
  volumeSnapshotRef: {namespace: ns, name: snap, uid: u1}
  nodeAffinity: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [a]}]}]
status: {snapshotHandle: h1}`
	snapForeign = `kind: VolumeSnapshot
metadata: {namespace: foreign, name: snap, uid: u2}
status: {boundVolumeSnapshotContentName: c2}`
	contentForeign = `kind: VolumeSnapshotContent
metadata: {name: c2}
spec:
  volumeSnapshotRef: {namespace: foreign, name: snap, uid: u2}
  nodeAffinity: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [secret-zone]}]}]
status: {snapshotHandle: h2}`
)

// grant is a ReferenceGrant in foreign letting claims of fromNS refer to
// VolumeSnapshots (all of them, or the one named to).
func grant(fromNS, to string) string {
	name := ""
	if to != "" {
		name = ", name: " + to
	}
	return `kind: ReferenceGrant
metadata: {namespace: foreign, name: g}
spec:
  from: [{group: "", kind: PersistentVolumeClaim, namespace: ` + fromNS + `}]
  to: [{group: snapshot.storage.k8s.io, kind: VolumeSnapshot` + name + `}]`
}

var group = Group

func local(name string) *v1.TypedLocalObjectReference {
	return &v1.TypedLocalObjectReference{APIGroup: &group, Kind: SnapshotKind, Name: name}
}

func ref(namespace, name string) *v1.TypedObjectReference {
	r := &v1.TypedObjectReference{APIGroup: &group, Kind: SnapshotKind, Name: name}
	if namespace != "" {
		r.Namespace = &namespace
	}
	return r
}

func claimOf(ds *v1.TypedLocalObjectReference, dsr *v1.TypedObjectReference) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
		Spec: v1.PersistentVolumeClaimSpec{DataSource: ds, DataSourceRef: dsr}}
}

var zoneOnlyA = v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: "topology.kubernetes.io/zone", Values: []string{"a"}}}}

type resolveCase struct {
	name       string
	claim      *v1.PersistentVolumeClaim
	docs       []string
	cross      bool   // CrossNamespaceVolumeDataSource
	failing    string // kind whose reads fail
	want       *Resolved
	wantReason Reason
	wantMsg    string
	// secret: the refusal must not name it, nor read anything there.
	secret string
}

func resolveCases() []resolveCase {
	nsObjects := []string{snapNS, contentNS}
	resolved := &Resolved{Snapshot: types.NamespacedName{Namespace: "ns", Name: "snap"}, Content: "c1", NodeAffinity: []v1.TopologySelectorTerm{zoneOnlyA}}
	foreignObjects := []string{snapNS, contentNS, snapForeign, contentForeign}
	return []resolveCase{
		{name: "no data source", claim: claimOf(nil, nil)},
		{name: "a clone is no snapshot", claim: claimOf(&v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}, nil)},
		{name: "kind VolumeSnapshot of another group", claim: claimOf(&v1.TypedLocalObjectReference{APIGroup: new(string), Kind: SnapshotKind, Name: "snap"}, nil)},
		{name: "dataSource", claim: claimOf(local("snap"), nil), docs: nsObjects, want: resolved},
		{name: "dataSourceRef", claim: claimOf(nil, ref("", "snap")), docs: nsObjects, want: resolved},
		{name: "dataSourceRef wins over dataSource", claim: claimOf(local("wrong"), ref("", "snap")), docs: nsObjects, want: resolved},
		{name: "dataSourceRef to a populator wins: no snapshot", claim: claimOf(local("snap"), &v1.TypedObjectReference{APIGroup: &group, Kind: "Populator", Name: "p"}), docs: nsObjects},
		{name: "dataSourceRef naming its own namespace", claim: claimOf(nil, ref("ns", "snap")), docs: nsObjects, want: resolved},
		{name: "another namespace, gate off: refused, nothing read there", claim: claimOf(nil, ref("foreign", "snap")), docs: foreignObjects,
			wantReason: Refused, wantMsg: `PersistentVolumeClaim "ns/c": its dataSourceRef names a VolumeSnapshot in another namespace, which is refused: the CrossNamespaceVolumeDataSource feature gate is off`, secret: "foreign"},
		{name: "another namespace, no grant: refused, nothing read there", claim: claimOf(nil, ref("foreign", "snap")), docs: foreignObjects, cross: true,
			wantReason: Refused, wantMsg: "no ReferenceGrant there allows it", secret: "foreign"},
		{name: "another namespace, grant for claims of a third namespace: refused", claim: claimOf(nil, ref("foreign", "snap")), docs: append(foreignObjects, grant("third", "")), cross: true,
			wantReason: Refused, wantMsg: "no ReferenceGrant there allows it", secret: "foreign"},
		{name: "another namespace, grant for another snapshot: refused", claim: claimOf(nil, ref("foreign", "snap")), docs: append(foreignObjects, grant("ns", "else")), cross: true,
			wantReason: Refused, wantMsg: "no ReferenceGrant there allows it", secret: "foreign"},
		{name: "another namespace, grants unreadable: retried, not named", claim: claimOf(nil, ref("foreign", "snap")), docs: foreignObjects, cross: true, failing: "ReferenceGrant",
			wantReason: Unavailable, wantMsg: "reading the ReferenceGrants its cross-namespace dataSourceRef needs failed", secret: "foreign"},
		{name: "another namespace, granted by name", claim: claimOf(nil, ref("foreign", "snap")), docs: append(foreignObjects, grant("ns", "snap")), cross: true,
			want: &Resolved{Snapshot: types.NamespacedName{Namespace: "foreign", Name: "snap"}, Content: "c2",
				NodeAffinity: []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: "topology.kubernetes.io/zone", Values: []string{"secret-zone"}}}}}}},
		{name: "another namespace, granted for every snapshot", claim: claimOf(nil, ref("foreign", "snap")), docs: append(foreignObjects, grant("ns", "")), cross: true,
			want: &Resolved{Snapshot: types.NamespacedName{Namespace: "foreign", Name: "snap"}, Content: "c2",
				NodeAffinity: []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: "topology.kubernetes.io/zone", Values: []string{"secret-zone"}}}}}}},
		{name: "snapshot missing", claim: claimOf(local("snap"), nil), wantReason: NotFound, wantMsg: `VolumeSnapshot "ns/snap" not found`},
		{name: "snapshot unreadable", claim: claimOf(local("snap"), nil), docs: nsObjects, failing: "VolumeSnapshot",
			wantReason: Unavailable, wantMsg: `looking up VolumeSnapshot "ns/snap": etcd leader changed`},
		{name: "snapshot not bound", claim: claimOf(local("snap"), nil), docs: []string{"kind: VolumeSnapshot\nmetadata: {namespace: ns, name: snap}"},
			wantReason: NotBound, wantMsg: `VolumeSnapshot "ns/snap" is not bound to a VolumeSnapshotContent yet`},
		{name: "content missing", claim: claimOf(local("snap"), nil), docs: []string{snapNS},
			wantReason: NotFound, wantMsg: `VolumeSnapshotContent "c1" of VolumeSnapshot "ns/snap" not found`},
		{name: "content bound to another snapshot (uid)", claim: claimOf(local("snap"), nil),
			docs:       []string{snapNS, strings.Replace(contentNS, "uid: u1", "uid: u9", 1)},
			wantReason: Misbound, wantMsg: `VolumeSnapshotContent "c1" of VolumeSnapshot "ns/snap" is bound to VolumeSnapshot "ns/snap" (uid "u9"), not to this one (uid "u1")`},
		{name: "content not cut", claim: claimOf(local("snap"), nil), docs: []string{snapNS, strings.Replace(contentNS, "status: {snapshotHandle: h1}", "", 1)},
			wantReason: NotCut, wantMsg: `VolumeSnapshotContent "c1" of VolumeSnapshot "ns/snap" has no snapshot handle yet, so the snapshot's topology is not known`},
		{name: "pre-provisioned content is cut", claim: claimOf(local("snap"), nil),
			docs: []string{snapNS, strings.Replace(contentNS, "status: {snapshotHandle: h1}", "", 1) + "\n  source: {snapshotHandle: h1}"}, want: resolved},
		{name: "content without nodeAffinity: no constraint", claim: claimOf(local("snap"), nil),
			docs: []string{snapNS, strings.Replace(contentNS, "  nodeAffinity: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [a]}]}]\n", "", 1)},
			want: &Resolved{Snapshot: resolved.Snapshot, Content: "c1"}},
		{name: "snapshot being deleted: resolved, and said", claim: claimOf(local("snap"), nil),
			docs: []string{strings.Replace(snapNS, "uid: u1}", "uid: u1, deletionTimestamp: '2026-11-26T10:00:00Z'}", 1), contentNS},
			want: &Resolved{Snapshot: resolved.Snapshot, Content: "c1", NodeAffinity: resolved.NodeAffinity, Deleting: "VolumeSnapshot"}},
		{name: "content being deleted: resolved, and said", claim: claimOf(local("snap"), nil),
			docs: []string{snapNS, strings.Replace(contentNS, "{name: c1}", "{name: c1, deletionTimestamp: '2026-11-26T10:00:00Z'}", 1)},
			want: &Resolved{Snapshot: resolved.Snapshot, Content: "c1", NodeAffinity: resolved.NodeAffinity, Deleting: "VolumeSnapshotContent"}},
		{name: "both being deleted", claim: claimOf(local("snap"), nil),
			docs: []string{strings.Replace(snapNS, "uid: u1}", "uid: u1, deletionTimestamp: '2026-11-26T10:00:00Z'}", 1),
				strings.Replace(contentNS, "{name: c1}", "{name: c1, deletionTimestamp: '2026-11-26T10:00:00Z'}", 1)},
			want: &Resolved{Snapshot: resolved.Snapshot, Content: "c1", NodeAffinity: resolved.NodeAffinity, Deleting: "VolumeSnapshot and VolumeSnapshotContent"}},
		{name: "malformed nodeAffinity", claim: claimOf(local("snap"), nil), docs: []string{snapNS, strings.Replace(contentNS, "values: [a]", "values: []", 1)},
			wantReason: Malformed, wantMsg: `VolumeSnapshotContent "c1" of VolumeSnapshot "ns/snap" has a malformed spec.nodeAffinity:`},
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range resolveCases() {
		t.Run(tc.name, func(t *testing.T) {
			reader := newReader(t, tc.docs...)
			reader.failing = tc.failing
			got, err := Resolver{Reader: reader, CrossNamespace: tc.cross}.Resolve(context.Background(), tc.claim)
			checkResolveError(t, tc, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
			if tc.secret == "" {
				return
			}
			if msg := err.Error(); strings.Contains(msg, tc.secret) || strings.Contains(msg, "secret-zone") || strings.Contains(msg, "c2") {
				t.Errorf("the refusal %q names something of namespace %s", err, tc.secret)
			}
			for _, a := range reader.asked {
				if strings.HasPrefix(a, "VolumeSnapshot/"+tc.secret) || strings.HasPrefix(a, "VolumeSnapshotContent/") {
					t.Errorf("read %s before the rule allowed it (reads %v)", a, reader.asked)
				}
			}
		})
	}
}

func checkResolveError(t *testing.T, tc resolveCase, err error) {
	t.Helper()
	if tc.wantReason == "" {
		if err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		return
	}
	var re *Error
	if !errors.As(err, &re) || re.Reason != tc.wantReason || !strings.Contains(re.Message, tc.wantMsg) {
		t.Fatalf("Resolve error %v (%T), want reason %s with %q", err, err, tc.wantReason, tc.wantMsg)
	}
	if tc.wantReason == Unavailable && re.Err == nil {
		t.Error("an Unavailable error must keep the read error for logs")
	}
}
