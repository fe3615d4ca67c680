package chaos

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	corev1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

// The audit's rules, as findings name them.
const (
	// RuleOrphan: a backend volume or snapshot no API object points to;
	// nothing will ever delete it.
	RuleOrphan = "orphan"
	// RuleMissing: a bound API object whose backend object is gone; a
	// pod using it would fail.
	RuleMissing = "missing"
	// RuleTopology: a restored claim bound outside its snapshot's
	// topology.
	RuleTopology = "outside-topology"
	// RuleStuck: an object still there after the workload deleted it and
	// the settle time passed.
	RuleStuck = "stuck"
	// RuleUpstream: a stuck object or an orphan volume whose cause is a
	// known defect of an upstream component the cluster runs unchanged,
	// named in the finding (lostBeingDeleted, ProvisionerLeaks); still a
	// finding, which --tolerate-upstream-defects lets pass (Verdict).
	RuleUpstream = "upstream-defect"
	// RuleFailed: a cycle whose objects never reached their end state (a
	// claim Bound, a snapshot ReadyToUse) though the run did not end under
	// it. Nothing may be left behind, yet the stack did not deliver: a
	// verb missing from the roles, a final error on a retry, a wait that
	// never ends.
	RuleFailed = "failed-cycle"
)

// Verdict is a run's result: nil without findings, or with only
// upstream defects when those are tolerated.
func Verdict(findings []Finding, tolerateUpstream bool) error {
	n := 0
	for _, f := range findings {
		if f.Rule != RuleUpstream || !tolerateUpstream {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d findings", ErrFindings, n)
}

// BackendVolume is a volume as the driver's ListVolumes reports it.
type BackendVolume struct {
	ID string
	// Segment is its accessible topology (zonepath volumes live in one
	// zone).
	Segment map[string]string
	// SourceSnapshot and SourceVolume are its volume_content_source.
	SourceSnapshot, SourceVolume string
}

// BackendSnapshot is a snapshot as the driver's ListSnapshots reports it.
type BackendSnapshot struct {
	ID, SourceVolume string
	Segments         []map[string]string
}

// Backend is everything the driver holds.
type Backend struct {
	Volumes   []BackendVolume
	Snapshots []BackendSnapshot
}

// Object is an API object as the audit sees it.
type Object struct {
	Kind, Namespace, Name string
	// Handle is a PersistentVolume's spec.csi.volumeHandle or a
	// VolumeSnapshotContent's status.snapshotHandle: the backend object
	// it stands for.
	Handle string
	// Bound is a PersistentVolume in phase Bound or a content that is
	// ReadyToUse: its backend object must exist.
	Bound       bool
	Deleting    bool
	Finalizers  []string
	Annotations map[string]string
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind + " " + o.Namespace + "/" + o.Name
}

// Finding is one broken rule.
type Finding struct {
	Rule string
	// What names the object: a backend ID or an API object.
	What string
	Why  string
	// Cycle is the workload cycle that made the object, when known.
	Cycle string
}

func (f Finding) String() string {
	s := fmt.Sprintf("%s: %s: %s", f.Rule, f.What, f.Why)
	if f.Cycle != "" {
		s += " (cycle " + f.Cycle + ")"
	}
	return s
}

// Failed is a finding for every cycle that ended neither ok nor cut short;
// the cycle's outcome, printed under it, says what went wrong.
func Failed(cycles []Cycle) []Finding {
	var out []Finding
	for _, c := range cycles {
		switch c.Outcome {
		case OutcomeOK, OutcomeCutShort, "":
			continue
		}
		out = append(out, Finding{Rule: RuleFailed, What: "cycle " + c.Name + " (" + c.Scenario + ")",
			Why: "its objects never reached their end state, though the run went on", Cycle: c.Name})
	}
	return out
}

// Origins tells which workload cycle made a backend object, by its ID.
type Origins map[string]string

// of is the cycle of the first of ids it knows.
func (o Origins) of(ids ...string) string {
	for _, id := range ids {
		if c, ok := o[id]; ok && id != "" {
			return c
		}
	}
	return ""
}

// Orphans are the backend objects no API object points to: volumes that
// are no PersistentVolume's volumeHandle, snapshots that are no
// VolumeSnapshotContent's snapshotHandle. Called after the workload
// deleted everything and the settle time, every one of them is leaked.
func Orphans(b Backend, objs []Object, origins Origins) []Finding {
	pvs, contents := handles(objs, "PersistentVolume"), handles(objs, "VolumeSnapshotContent")
	var out []Finding
	for _, v := range b.Volumes {
		if !pvs[v.ID] {
			out = append(out, Finding{Rule: RuleOrphan, What: "backend volume " + v.ID,
				Why:   "no PersistentVolume has this volumeHandle; " + describeVolume(v),
				Cycle: origins.of(v.ID, v.SourceSnapshot, v.SourceVolume)})
		}
	}
	for _, s := range b.Snapshots {
		if !contents[s.ID] {
			out = append(out, Finding{Rule: RuleOrphan, What: "backend snapshot " + s.ID,
				Why:   fmt.Sprintf("no VolumeSnapshotContent has this snapshotHandle; of volume %s, usable from %s", s.SourceVolume, formatSegments(s.Segments)),
				Cycle: origins.of(s.ID, s.SourceVolume)})
		}
	}
	return out
}

func describeVolume(v BackendVolume) string {
	s := "in " + formatSegments([]map[string]string{v.Segment})
	switch {
	case v.SourceSnapshot != "":
		s += ", restored from snapshot " + v.SourceSnapshot
	case v.SourceVolume != "":
		s += ", cloned from volume " + v.SourceVolume
	}
	return s
}

func handles(objs []Object, kind string) map[string]bool {
	out := map[string]bool{}
	for _, o := range objs {
		if o.Kind == kind && o.Handle != "" {
			out[o.Handle] = true
		}
	}
	return out
}

// Missing are the bound API objects whose backend object the driver does
// not have.
func Missing(b Backend, objs []Object, origins Origins) []Finding {
	vols, snaps := map[string]bool{}, map[string]bool{}
	for _, v := range b.Volumes {
		vols[v.ID] = true
	}
	for _, s := range b.Snapshots {
		snaps[s.ID] = true
	}
	var out []Finding
	for _, o := range objs {
		if !o.Bound || o.Handle == "" {
			continue
		}
		have := (o.Kind == "PersistentVolume" && vols[o.Handle]) || (o.Kind == "VolumeSnapshotContent" && snaps[o.Handle])
		if !have {
			out = append(out, Finding{Rule: RuleMissing, What: o.String(),
				Why: "bound to backend object " + o.Handle + ", which the driver does not list", Cycle: origins.of(o.Handle)})
		}
	}
	return out
}

// beingDeleted is the annotation the snapshot-controller puts on a
// content before deleting it; upstream's sidecar deletes the backend
// snapshot only when it is there.
const beingDeleted = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"

// beingCreated is the annotation the sidecar keeps on a content while
// its CreateSnapshot may still be in progress.
const beingCreated = "snapshot.storage.kubernetes.io/volumesnapshot-being-created"

// Markers are the annotations that say an operation on an object is not
// finished: upstream's being-created and being-deleted annotations of
// snapshots, and any other key naming work in progress.
var markerWords = []string{"being-created", "being-deleted", "in-progress", "inprogress"}

// Stuck describes every object of objs, which the caller found still
// there after the workload deleted everything it made and the settle time
// passed: what holds it.
func Stuck(objs []Object, origins Origins) []Finding {
	var out []Finding
	for _, o := range objs {
		rule := RuleStuck
		if lostBeingDeleted(o) {
			rule = RuleUpstream
		}
		out = append(out, Finding{Rule: rule, What: o.String(), Why: holders(o), Cycle: origins.of(o.Handle, o.Name)})
	}
	return out
}

// lostBeingDeleted is a content deleted without the being-deleted
// annotation. snapshot-controller v8.7.0 (setAnnVolumeSnapshotBeingDeleted)
// sets the annotation on its informer's cached copy before the PATCH that
// writes it; when that PATCH is lost (kube-apiserver killed under it) the
// retry finds the annotation in the cache, skips the PATCH and deletes the
// content, and the sidecar, which deletes only contents carrying the
// annotation, never calls DeleteSnapshot. kubernetes-csi/external-snapshotter
// pull request 1446 (open) reaches the same state through a throttled PATCH.
// Only a cut content (a handle, no creation in progress) can be in that
// state: one still being created is held by its creation instead.
func lostBeingDeleted(o Object) bool {
	_, marked := o.Annotations[beingDeleted]
	_, creating := o.Annotations[beingCreated]
	return o.Kind == "VolumeSnapshotContent" && o.Deleting && o.Handle != "" && !marked && !creating
}

func holders(o Object) string {
	var parts []string
	if len(o.Finalizers) > 0 {
		parts = append(parts, "finalizers "+strings.Join(o.Finalizers, ", "))
	}
	var markers []string
	for _, k := range slices.Sorted(maps.Keys(o.Annotations)) {
		if slices.ContainsFunc(markerWords, func(w string) bool { return strings.Contains(k, w) }) {
			markers = append(markers, k)
		}
	}
	if len(markers) > 0 {
		parts = append(parts, "annotations "+strings.Join(markers, ", "))
	}
	if lostBeingDeleted(o) {
		parts = append(parts, "deleted without the "+beingDeleted+" annotation, so the snapshotter sidecar never calls DeleteSnapshot for it "+
			"(snapshot-controller v8.7.0 marks its cached copy before the PATCH, and a lost PATCH is never sent again; see external-snapshotter pull request 1446)")
	}
	switch {
	case !o.Deleting:
		parts = append(parts, "no deletion requested")
	case len(parts) == 0:
		parts = append(parts, "deletion requested, nothing holds it: not yet collected")
	}
	if o.Handle != "" {
		parts = append(parts, "backend object "+o.Handle)
	}
	return strings.Join(parts, "; ")
}

// Restore is a restored claim as it was bound, recorded before anything
// was deleted or edited.
type Restore struct {
	Cycle, Claim, PV string
	// PVAffinity is the PersistentVolume's spec.nodeAffinity.
	PVAffinity *v1.VolumeNodeAffinity
	// Volume is the segment the driver reports for the volume.
	Volume map[string]string
	// Content is the VolumeSnapshotContent it was restored from, and
	// ContentAffinity that content's nodeAffinity before any admin edit.
	Content         string
	ContentAffinity []v1.TopologySelectorTerm
}

// OutsideTopology checks that a restored claim is bound inside its
// snapshot's topology: the driver's segment for the volume matches the
// content's nodeAffinity, and no node the PersistentVolume admits lies
// outside it. nodes are the labels of the cluster's nodes.
func OutsideTopology(r Restore, nodes []map[string]string) *Finding {
	f := &Finding{Rule: RuleTopology, What: "claim " + r.Claim, Cycle: r.Cycle}
	if len(r.ContentAffinity) == 0 {
		f.Why = "its VolumeSnapshotContent " + r.Content + " had no nodeAffinity to check against"
		return f
	}
	if !corev1helper.MatchTopologySelectorTerms(r.ContentAffinity, labels.Set(r.Volume)) {
		f.Why = fmt.Sprintf("the driver placed volume of PV %s in %s, outside content %s's nodeAffinity %s",
			r.PV, formatSegments([]map[string]string{r.Volume}), r.Content, formatTerms(r.ContentAffinity))
		return f
	}
	if r.PVAffinity == nil || r.PVAffinity.Required == nil {
		f.Why = "PV " + r.PV + " has no nodeAffinity: it admits every node, the snapshot's topology does not"
		return f
	}
	for _, n := range nodes {
		node := &v1.Node{}
		node.Labels = n
		inPV, err := corev1helpers.MatchNodeSelectorTerms(node, r.PVAffinity.Required)
		if err != nil {
			f.Why = fmt.Sprintf("PV %s has a malformed nodeAffinity: %v", r.PV, err)
			return f
		}
		if inPV && !corev1helper.MatchTopologySelectorTerms(r.ContentAffinity, labels.Set(n)) {
			f.Why = fmt.Sprintf("PV %s admits node %s (%s), outside content %s's nodeAffinity %s",
				r.PV, n[v1.LabelHostname], formatSegments([]map[string]string{n}), r.Content, formatTerms(r.ContentAffinity))
			return f
		}
	}
	return nil
}

// formatSegments writes segments by their region and zone, the keys the
// cluster uses, or whole when they have others.
func formatSegments(segs []map[string]string) string {
	if len(segs) == 0 {
		return "everywhere (no topology)"
	}
	var out []string
	for _, s := range segs {
		var kv []string
		for _, k := range []string{v1.LabelTopologyRegion, v1.LabelTopologyZone} {
			if v, ok := s[k]; ok {
				kv = append(kv, v)
			}
		}
		if len(kv) == 0 {
			kv = append(kv, fmt.Sprint(s))
		}
		out = append(out, strings.Join(kv, "/"))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func formatTerms(terms []v1.TopologySelectorTerm) string {
	var out []string
	for _, t := range terms {
		var exprs []string
		for _, e := range t.MatchLabelExpressions {
			exprs = append(exprs, fmt.Sprintf("%s in (%s)", e.Key, strings.Join(e.Values, ",")))
		}
		out = append(out, "{"+strings.Join(exprs, " & ")+"}")
	}
	return strings.Join(out, " | ")
}
