package snapshotapi

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/zonepath/zonepath/controllers/topology"
)

// Reader reads the objects a Resolver follows. The scheduler plugin reads
// its informers' caches (Listers), the provisioner the API server (Live).
// A missing object is an error for which apierrors.IsNotFound holds.
type Reader interface {
	VolumeSnapshot(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	VolumeSnapshotContent(ctx context.Context, name string) (*unstructured.Unstructured, error)
	// ReferenceGrants lists the gateway.networking.k8s.io ReferenceGrants
	// of a namespace. It is called only when cross-namespace data sources
	// are on (Resolver.CrossNamespace).
	ReferenceGrants(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error)
}

// SnapshotKind is the data source kind a restore names.
const SnapshotKind = "VolumeSnapshot"

// SourceOf returns the VolumeSnapshot a claim restores from, by Kubernetes'
// precedence (k8s.io/api core/v1 PersistentVolumeClaimSpec): dataSourceRef,
// when set, "will replace the functionality of the dataSource field", and
// only it can name another namespace; dataSource counts only without it.
// ok is false when the field that counts names anything but a
// snapshot.storage.k8s.io VolumeSnapshot.
func SourceOf(claim *v1.PersistentVolumeClaim) (snap types.NamespacedName, ok bool) {
	if ref := claim.Spec.DataSourceRef; ref != nil {
		if !isSnapshot(ref.APIGroup, ref.Kind) {
			return types.NamespacedName{}, false
		}
		ns := claim.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = *ref.Namespace
		}
		return types.NamespacedName{Namespace: ns, Name: ref.Name}, true
	}
	if ref := claim.Spec.DataSource; ref != nil && isSnapshot(ref.APIGroup, ref.Kind) {
		return types.NamespacedName{Namespace: claim.Namespace, Name: ref.Name}, true
	}
	return types.NamespacedName{}, false
}

func isSnapshot(group *string, kind string) bool {
	return group != nil && *group == Group && kind == SnapshotKind
}

// Resolver follows a claim to the VolumeSnapshot it restores and to that
// snapshot's content: the one answer the scheduler plugin and the
// provisioner give to "where can this claim be restored".
type Resolver struct {
	Reader Reader
	// CrossNamespace is the CrossNamespaceVolumeDataSource feature gate of
	// the component: without it, a dataSourceRef into another namespace
	// is refused; with it, a ReferenceGrant there must allow it.
	CrossNamespace bool
}

// Resolved is a claim's snapshot source, bound, checked and cut.
type Resolved struct {
	Snapshot types.NamespacedName
	Content  string
	// NodeAffinity is the content's validated spec.nodeAffinity; empty:
	// no constraint.
	NodeAffinity []v1.TopologySelectorTerm
	// Deleting names what of the two is being deleted ("VolumeSnapshot",
	// "VolumeSnapshotContent" or both), "" when neither is. It informs,
	// it does not refuse: the snapshot-controller holds such a deletion
	// with finalizers while a claim restores from the snapshot, and
	// external-provisioner goes on restoring while it is held.
	Deleting string
}

// Resolve follows claim to its snapshot's content. It returns nil and no
// error for a claim that restores no VolumeSnapshot. Every failure is an
// *Error. A snapshot in another namespace is read only once the rule for
// cross-namespace data sources allows it, so a refusal tells nothing of
// that namespace.
func (r Resolver) Resolve(ctx context.Context, claim *v1.PersistentVolumeClaim) (*Resolved, error) {
	ref, ok := SourceOf(claim)
	if !ok {
		return nil, nil
	}
	if ref.Namespace != claim.Namespace {
		if err := r.allowed(ctx, claim, ref); err != nil {
			return nil, err
		}
	}
	vs, err := r.snapshot(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r.content(ctx, vs)
}

func (r Resolver) snapshot(ctx context.Context, ref types.NamespacedName) (*snapshotv1.VolumeSnapshot, error) {
	what := fmt.Sprintf("VolumeSnapshot %q", ref.String())
	u, err := r.Reader.VolumeSnapshot(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return nil, readError(what, err)
	}
	vs := &snapshotv1.VolumeSnapshot{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, vs); err != nil {
		return nil, &Error{Reason: Malformed, Message: fmt.Sprintf("%s is malformed: %v", what, err)}
	}
	if vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil || *vs.Status.BoundVolumeSnapshotContentName == "" {
		return nil, &Error{Reason: NotBound, Message: what + " is not bound to a VolumeSnapshotContent yet"}
	}
	return vs, nil
}

// content reads the content vs is bound to and checks that its topology
// can be trusted: it points back at vs, and its snapshot is cut. The
// snapshotter writes nodeAffinity from CreateSnapshot's answer no later
// than the snapshot handle, so before the handle an absent nodeAffinity
// means "not known yet", not "accessible everywhere".
func (r Resolver) content(ctx context.Context, vs *snapshotv1.VolumeSnapshot) (*Resolved, error) {
	name := *vs.Status.BoundVolumeSnapshotContentName
	what := fmt.Sprintf("VolumeSnapshotContent %q of VolumeSnapshot %q", name, vs.Namespace+"/"+vs.Name)
	u, err := r.Reader.VolumeSnapshotContent(ctx, name)
	if err != nil {
		return nil, readError(what, err)
	}
	vsc := &snapshotv1.VolumeSnapshotContent{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, vsc); err != nil {
		return nil, &Error{Reason: Malformed, Message: fmt.Sprintf("%s is malformed: %v", what, err)}
	}
	if ref := vsc.Spec.VolumeSnapshotRef; ref.Namespace != vs.Namespace || ref.Name != vs.Name || (ref.UID != "" && ref.UID != vs.UID) {
		return nil, &Error{Reason: Misbound, Message: fmt.Sprintf("%s is bound to VolumeSnapshot %q (uid %q), not to this one (uid %q)",
			what, ref.Namespace+"/"+ref.Name, ref.UID, vs.UID)}
	}
	if !IsCut(vsc) {
		return nil, &Error{Reason: NotCut, Message: what + " has no snapshot handle yet, so the snapshot's topology is not known"}
	}
	terms, err := NodeAffinity(u)
	if err == nil {
		err = topology.Validate(terms)
	}
	if err != nil {
		return nil, &Error{Reason: Malformed, Message: fmt.Sprintf("%s has a malformed spec.nodeAffinity: %v", what, err)}
	}
	return &Resolved{Snapshot: types.NamespacedName{Namespace: vs.Namespace, Name: vs.Name}, Content: name, NodeAffinity: terms,
		Deleting: deleting(vs.DeletionTimestamp != nil, vsc.DeletionTimestamp != nil)}, nil
}

// deleting names the objects of a restore that are being deleted.
func deleting(snapshot, content bool) string {
	switch {
	case snapshot && content:
		return "VolumeSnapshot and VolumeSnapshotContent"
	case snapshot:
		return "VolumeSnapshot"
	case content:
		return "VolumeSnapshotContent"
	}
	return ""
}

// IsCut says whether a content's snapshot exists: a handle in its status
// (cut by the snapshotter) or in its spec (pre-provisioned).
func IsCut(vsc *snapshotv1.VolumeSnapshotContent) bool {
	return (vsc.Spec.Source.SnapshotHandle != nil && *vsc.Spec.Source.SnapshotHandle != "") ||
		(vsc.Status != nil && vsc.Status.SnapshotHandle != nil && *vsc.Status.SnapshotHandle != "")
}

// Reason says why a claim's snapshot source does not resolve.
type Reason string

// The reasons. Every one but Unavailable needs a change of the objects to
// clear; Unavailable is a read that failed and may succeed when retried.
const (
	Refused     Reason = "Refused"     // a dataSourceRef into another namespace that the rule does not allow
	NotFound    Reason = "NotFound"    // the VolumeSnapshot or its content does not exist
	NotBound    Reason = "NotBound"    // the VolumeSnapshot has no content yet
	Misbound    Reason = "Misbound"    // the content is bound to another snapshot
	NotCut      Reason = "NotCut"      // the content has no snapshot handle yet
	Malformed   Reason = "Malformed"   // an object or its nodeAffinity cannot be read
	Unavailable Reason = "Unavailable" // reading failed for another reason than a missing object
)

// Error is why Resolve failed. Message names the object that stops the
// resolution and is meant for the user (an event, a pod condition).
type Error struct {
	Reason  Reason
	Message string
	Err     error // the read error, for Unavailable
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

func readError(what string, err error) error {
	if apierrors.IsNotFound(err) {
		return &Error{Reason: NotFound, Message: what + " not found", Err: err}
	}
	return &Error{Reason: Unavailable, Message: fmt.Sprintf("looking up %s: %v", what, err), Err: err}
}
