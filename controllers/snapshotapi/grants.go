package snapshotapi

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

// ReferenceGrants is the resource of the grants a cross-namespace data
// source needs, at v1beta1: the version external-provisioner reads and
// every Gateway API release that has ReferenceGrant serves.
var ReferenceGrants = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1beta1", Resource: "referencegrants"}

// allowed applies Kubernetes' rule for a dataSourceRef into another
// namespace (k8s.io/api core/v1 PersistentVolumeClaimSpec.dataSourceRef):
// the CrossNamespaceVolumeDataSource feature gate must be on, and "a
// gateway.networking.k8s.io/ReferenceGrant object is required in the
// referent namespace to allow that namespace's owner to accept the
// reference". Nothing of the other namespace is read before the gate
// allows it, and the refusal names nothing there.
func (r Resolver) allowed(ctx context.Context, claim *v1.PersistentVolumeClaim, ref types.NamespacedName) error {
	key := claim.Namespace + "/" + claim.Name
	if !r.CrossNamespace {
		return refused(key, "the CrossNamespaceVolumeDataSource feature gate is off")
	}
	grants, err := r.Reader.ReferenceGrants(ctx, ref.Namespace)
	if err != nil {
		// The read error names the other namespace; it goes to logs
		// (Err), not to the claim's events (Message).
		return &Error{Reason: Unavailable, Err: err,
			Message: fmt.Sprintf("PersistentVolumeClaim %q: reading the ReferenceGrants its cross-namespace dataSourceRef needs failed", key)}
	}
	for _, u := range grants {
		if grants, err := grantsClaim(u, claim.Namespace, ref.Name); err == nil && grants {
			return nil
		}
	}
	return refused(key, "no ReferenceGrant there allows it")
}

func refused(claim, why string) error {
	return &Error{Reason: Refused, Message: fmt.Sprintf(
		"PersistentVolumeClaim %q: its dataSourceRef names a VolumeSnapshot in another namespace, which is refused: %s", claim, why)}
}

// grantsClaim says whether a ReferenceGrant lets PersistentVolumeClaims of
// namespace refer to the VolumeSnapshot named snapshot in its own
// namespace: a "from" entry for core PersistentVolumeClaims of namespace,
// and a "to" entry for snapshot.storage.k8s.io VolumeSnapshots that names
// this one or none ("When unspecified, this policy refers to all resources
// of the specified Group and Kind in the local namespace").
func grantsClaim(u *unstructured.Unstructured, namespace, snapshot string) (bool, error) {
	g := &gatewayv1beta1.ReferenceGrant{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, g); err != nil {
		return false, err
	}
	from := false
	for _, f := range g.Spec.From {
		from = from || (f.Group == "" && f.Kind == "PersistentVolumeClaim" && string(f.Namespace) == namespace)
	}
	if !from {
		return false, nil
	}
	for _, t := range g.Spec.To {
		if string(t.Group) == Group && t.Kind == SnapshotKind && (t.Name == nil || *t.Name == "" || string(*t.Name) == snapshot) {
			return true, nil
		}
	}
	return false, nil
}
