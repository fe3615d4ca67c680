package provisioner

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

// narrow returns options with StorageClass replaced by a copy whose
// allowedTopologies are the snapshot's nodeAffinity ∩ the class's
// allowedTopologies, when all of these hold:
//   - the VolumeSnapshotTopology gate is on;
//   - no node is selected: upstream then builds the CSI requirement from
//     allowedTopologies alone (Immediate binding). With a selected node
//     (WaitForFirstConsumer) the scheduler plugin already chose a node
//     inside the snapshot's topology, and upstream's node-based requirement
//     is left alone;
//   - the claim restores a VolumeSnapshot (dataSource or dataSourceRef);
//   - its bound content has a non-empty nodeAffinity (empty: no constraint,
//     the behaviour before KEP-5943) and a snapshot handle (see
//     snapshotTopology).
//
// Otherwise options come back unchanged and nothing is read. The caller's
// StorageClass is the lib's informer cache object and is never modified.
func (p *Provisioner) narrow(ctx context.Context, options controller.ProvisionOptions) (controller.ProvisionOptions, error) {
	if !features.Enabled() || options.SelectedNodeName != "" || options.StorageClass == nil || options.PVC == nil {
		return options, nil
	}
	ref, ok := snapshotSource(options.PVC)
	if !ok {
		return options, nil
	}
	content, affinity, err := p.snapshotTopology(ctx, ref)
	if err != nil || len(affinity) == 0 {
		return options, err
	}
	class := options.StorageClass
	terms, ok, err := topology.Intersect(affinity, class.AllowedTopologies)
	if err != nil {
		return options, fmt.Errorf("intersecting VolumeSnapshotContent %q (VolumeSnapshot %q) nodeAffinity with StorageClass %q allowedTopologies: %w",
			content, ref, class.Name, err)
	}
	if !ok {
		return options, &DisjointError{Content: content, Snapshot: ref.String(), StorageClass: class.Name,
			NodeAffinity: affinity, AllowedTopologies: class.AllowedTopologies}
	}
	narrowed := class.DeepCopy()
	narrowed.AllowedTopologies = terms
	options.StorageClass = narrowed
	return options, nil
}

// snapshotTopology returns the name and nodeAffinity of the content bound
// to ref. A snapshot that is not bound yet, or whose content is missing,
// bound elsewhere or not cut yet, is an error rather than "no constraint":
// upstream reads the same objects from the API server a moment later, and
// if they became ready in between it would provision without the
// snapshot's topology. Failing here costs one retry; guessing could put
// the volume where the snapshot cannot be restored.
func (p *Provisioner) snapshotTopology(ctx context.Context, ref snapshotRef) (string, []v1.TopologySelectorTerm, error) {
	if p.lookup == nil {
		return "", nil, fmt.Errorf("VolumeSnapshot %q: no snapshot lookup configured to read its topology", ref)
	}
	snap, err := p.lookup.VolumeSnapshot(ctx, ref.namespace, ref.name)
	if err != nil {
		return "", nil, fmt.Errorf("reading VolumeSnapshot %q for its topology: %w", ref, err)
	}
	if snap.Status == nil || snap.Status.BoundVolumeSnapshotContentName == nil || *snap.Status.BoundVolumeSnapshotContentName == "" {
		return "", nil, fmt.Errorf("VolumeSnapshot %q is not bound to a VolumeSnapshotContent yet", ref)
	}
	name := *snap.Status.BoundVolumeSnapshotContentName
	content, err := p.lookup.VolumeSnapshotContent(ctx, name)
	if err != nil {
		return "", nil, fmt.Errorf("reading VolumeSnapshotContent %q of VolumeSnapshot %q for its topology: %w", name, ref, err)
	}
	if err := checkBinding(content, ref, string(snap.UID)); err != nil {
		return "", nil, err
	}
	if !isCut(content) {
		return "", nil, fmt.Errorf("VolumeSnapshotContent %q of VolumeSnapshot %q has no snapshot handle yet, so the snapshot's topology is not known; the claim is retried",
			name, ref)
	}
	affinity, err := snapshotapi.NodeAffinity(content)
	if err != nil {
		return "", nil, fmt.Errorf("VolumeSnapshot %q: %w", ref, err)
	}
	return name, affinity, nil
}

// checkBinding verifies the content points back at the snapshot, as
// upstream does before restoring: a content bound to another snapshot
// would lend it the wrong topology.
func checkBinding(content *unstructured.Unstructured, ref snapshotRef, uid string) error {
	ns, _, _ := unstructured.NestedString(content.Object, "spec", "volumeSnapshotRef", "namespace")
	name, _, _ := unstructured.NestedString(content.Object, "spec", "volumeSnapshotRef", "name")
	refUID, _, _ := unstructured.NestedString(content.Object, "spec", "volumeSnapshotRef", "uid")
	if ns != ref.namespace || name != ref.name || (refUID != "" && uid != "" && refUID != uid) {
		return fmt.Errorf("VolumeSnapshotContent %q is bound to VolumeSnapshot %q (uid %q), not to %q (uid %q)",
			content.GetName(), ns+"/"+name, refUID, ref, uid)
	}
	return nil
}

// isCut says whether the content's snapshot exists: a handle in its status
// (cut by the snapshotter) or in spec.source (pre-provisioned). The
// snapshotter writes nodeAffinity before the handle, so until then an
// absent nodeAffinity means "not known yet", not "everywhere"; the
// SnapshotTopology scheduler plugin reads it the same way.
func isCut(content *unstructured.Unstructured) bool {
	for _, path := range [][]string{{"status", "snapshotHandle"}, {"spec", "source", "snapshotHandle"}} {
		if handle, _, _ := unstructured.NestedString(content.Object, path...); handle != "" {
			return true
		}
	}
	return false
}

// DisjointError reports a snapshot that cannot be restored anywhere its
// StorageClass allows. The lib turns it into a ProvisioningFailed Warning
// event on the claim, so it names both objects and both term lists: the
// user must change one of them (or restore through another class).
type DisjointError struct {
	Content, Snapshot, StorageClass string
	NodeAffinity, AllowedTopologies []v1.TopologySelectorTerm
}

func (e *DisjointError) Error() string {
	return fmt.Sprintf("snapshot topology and StorageClass allowedTopologies do not intersect: "+
		"VolumeSnapshotContent %q (VolumeSnapshot %q) nodeAffinity %s and StorageClass %q allowedTopologies %s",
		e.Content, e.Snapshot, formatTerms(e.NodeAffinity), e.StorageClass, formatTerms(e.AllowedTopologies))
}

// formatTerms writes terms compactly for an event:
// [{zone in (a, b), region in (r1)} {zone in (c)}].
func formatTerms(terms []v1.TopologySelectorTerm) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		exprs := make([]string, len(t.MatchLabelExpressions))
		for j, e := range t.MatchLabelExpressions {
			exprs[j] = e.Key + " in (" + strings.Join(e.Values, ", ") + ")"
		}
		parts[i] = "{" + strings.Join(exprs, ", ") + "}"
	}
	return "[" + strings.Join(parts, " ") + "]"
}
