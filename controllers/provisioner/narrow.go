package provisioner

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

// narrow returns options with StorageClass replaced by a copy whose
// allowedTopologies are the snapshot's nodeAffinity ∩ the class's
// allowedTopologies (less the key combinations no node carries, see
// placeable), when all of these hold:
//   - the VolumeSnapshotTopology gate is on;
//   - no node is selected: upstream then builds the CSI requirement from
//     allowedTopologies alone (Immediate binding). With a selected node
//     (WaitForFirstConsumer) the scheduler plugin already chose a node
//     inside the snapshot's topology, and upstream's node-based requirement
//     is left alone;
//   - the claim restores a VolumeSnapshot (snapshotapi.SourceOf).
//
// For such a claim the allowedTopologies handed upstream are pinned
// (pinned): a retry repeats them. A content without nodeAffinity (or with
// nodeAffinity: []) restricts nothing, and the class passes unchanged.
// Otherwise options come back unchanged and nothing is read. ok says
// whether the claim is one narrow decides for. The caller's StorageClass
// is the lib's informer cache object and is never modified.
func (p *Provisioner) narrow(ctx context.Context, options controller.ProvisionOptions) (_ controller.ProvisionOptions, ok bool, _ error) {
	if !features.Enabled() || options.SelectedNodeName != "" || options.StorageClass == nil || options.PVC == nil {
		return options, false, nil
	}
	if _, ok := snapshotapi.SourceOf(options.PVC); !ok {
		return options, false, nil
	}
	terms, err := p.pinned(ctx, options)
	if err != nil {
		return options, true, err
	}
	if sameTerms(terms, options.StorageClass.AllowedTopologies) {
		return options, true, nil
	}
	narrowed := options.StorageClass.DeepCopy()
	narrowed.AllowedTopologies = terms
	options.StorageClass = narrowed
	return options, true, nil
}

// intersection is what the claim's snapshot and class allow now: the
// content's nodeAffinity ∩ the class's allowedTopologies, or the class's
// own when the nodeAffinity is empty. A snapshot that does not resolve
// (not bound yet, bound elsewhere, not cut, in another namespace without a
// grant) is an error rather than "no constraint": upstream reads the same
// objects from the API server a moment later, and if they became ready in
// between it would provision without the snapshot's topology. Failing
// here costs one retry; guessing could put the volume where the snapshot
// cannot be restored.
func (p *Provisioner) intersection(ctx context.Context, options controller.ProvisionOptions) ([]v1.TopologySelectorTerm, error) {
	src, err := p.resolver.Resolve(ctx, options.PVC)
	if err != nil {
		return nil, err
	}
	class := options.StorageClass
	if len(src.NodeAffinity) == 0 {
		return class.AllowedTopologies, nil
	}
	terms, ok, err := topology.Intersect(src.NodeAffinity, class.AllowedTopologies)
	if err != nil {
		return nil, fmt.Errorf("intersecting VolumeSnapshotContent %q (VolumeSnapshot %q) nodeAffinity with StorageClass %q allowedTopologies: %w",
			src.Content, src.Snapshot, class.Name, err)
	}
	disjoint := &DisjointError{Content: src.Content, Snapshot: src.Snapshot.String(), StorageClass: class.Name,
		NodeAffinity: src.NodeAffinity, AllowedTopologies: class.AllowedTopologies}
	if !ok {
		return nil, disjoint
	}
	kept, drivers, err := placeable(terms, class.AllowedTopologies, src.NodeAffinity, p.nodes)
	switch {
	case err != nil:
		return nil, fmt.Errorf("VolumeSnapshotContent %q (VolumeSnapshot %q), StorageClass %q: finding the nodes of driver %q in their intersection %s: %w",
			src.Content, src.Snapshot, class.Name, p.nodes.Driver, formatTerms(terms), err)
	case kept == nil && drivers == 0:
		// Not disjoint as far as anyone knows: no node plugin has
		// registered yet. The lib retries; a node registering ends it.
		return nil, fmt.Errorf("VolumeSnapshotContent %q (VolumeSnapshot %q) and StorageClass %q intersect only in %s, combined key by key, and no CSINode lists driver %q yet to tell which of those segments exist",
			src.Content, src.Snapshot, class.Name, formatTerms(terms), p.nodes.Driver)
	case kept == nil:
		disjoint.Driver, disjoint.Merged = p.nodes.Driver, terms
		return nil, disjoint
	}
	return kept, nil
}

// DisjointError reports a snapshot that cannot be restored anywhere its
// StorageClass allows. The lib turns it into a ProvisioningFailed Warning
// event on the claim, so it names both objects and both term lists: the
// user must change one of them (or restore through another class).
// Merged is set when the terms do intersect key by key, but only in
// segments no node of Driver carries (placeable): terms in different keys
// for one place, such as a vendor zone key and topology.kubernetes.io/zone.
type DisjointError struct {
	Content, Snapshot, StorageClass string
	NodeAffinity, AllowedTopologies []v1.TopologySelectorTerm
	Driver                          string
	Merged                          []v1.TopologySelectorTerm
}

func (e *DisjointError) Error() string {
	msg := fmt.Sprintf("snapshot topology and StorageClass allowedTopologies do not intersect: "+
		"VolumeSnapshotContent %q (VolumeSnapshot %q) nodeAffinity %s and StorageClass %q allowedTopologies %s",
		e.Content, e.Snapshot, formatTerms(e.NodeAffinity), e.StorageClass, formatTerms(e.AllowedTopologies))
	if e.Merged != nil {
		msg += fmt.Sprintf(" combine key by key only into %s, which no node of driver %q carries (CSINode, Node labels)",
			formatTerms(e.Merged), e.Driver)
	}
	return msg
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
