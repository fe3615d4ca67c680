// Package topology converts, validates and intersects the topology
// constraints of KEP-5943 (topology for volume snapshots). It is pure: no
// API calls, no clocks, no randomness, so every controller that needs
// these rules (snapshotter sidecar, provisioner, scheduler plugin) gets
// exactly the same answer. It does not match nodes against terms:
// Kubernetes' MatchTopologySelectorTerms (k8s.io/kubernetes/pkg/apis/core/v1/helper)
// does, and the tests hold every conversion here to it. It does not
// import k8s.io/kubernetes, which the provisioner and snapshotter do not
// link. It is not the driver's world model (driver/world).
//
// Two shapes meet here. CSI reports where something is accessible as a
// list of segments ([]*csi.Topology), each a map from topology key to one
// value: {region: r1, zone: a}. Kubernetes stores constraints as
// []v1.TopologySelectorTerm, in VolumeSnapshotContent.spec.nodeAffinity
// and in StorageClass / VolumeSnapshotClass allowedTopologies. A term is
// an AND of "key in values" expressions and a list of terms is an OR.
//
// # Why the conversion is lossless
//
// A segment list is an OR of ANDs of single values, so each segment maps
// to exactly one term with one value per key, and nothing is gained or
// lost. The tempting shortcut, folding all segments into one term whose
// values are sets ({region in [r1,r2], zone in [a,b]}), describes the
// cartesian product of those sets: a snapshot accessible from {r1,a} and
// {r2,b} would then also claim {r2,a} and {r1,b}, the scheduler would
// place pods there, and the restore would fail inside the driver after
// the pod was already bound. FromCSI never folds. Expand goes the other
// way by expanding each term's product, so Expand(FromCSI(s)) is s, in
// order, without duplicates.
//
// # No constraint versus no node
//
// An empty term list means "no constraint": it matches every node and is
// the identity of Intersect. A list whose intersection is empty means the
// opposite, "no node at all". Intersect reports that case with ok ==
// false so that a provisioner fails with an event instead of mistaking
// the empty result for "provision anywhere". Inside a non-empty list a
// term without expressions would select no node (Kubernetes' rule); the
// converting functions reject such terms as malformed rather than guess.
//
// # Malformed terms
//
// Validate, Normalize, Expand, Requirement and Intersect reject, with an
// error wrapping ErrInvalidTerm that names the index: an expression
// without values, a key in two expressions of one term, a term without
// expressions, a key that is not a label key, a value that is not a
// non-empty label value, more than MaxKeysPerTerm expressions. These are
// Kubernetes' rules for StorageClass allowedTopologies (core validation
// ValidateTopologySelectorTerm: values required, keys unique in a term,
// keys label names) plus what a CSI segment needs. The CRDs of
// controllers/crds reject the same shapes at admission; this package
// still checks them because objects written before the schema did, or
// through a CRD installed by hand, reach the controllers too, and a
// malformed term read literally would silently match no node. Duplicate
// values and duplicate terms are not errors: they are read as sets.
//
// # Bounds
//
// Every limit on topology terms in zonepath, and who enforces it:
//
//   - MaxSegments (1024) segments one term list expands to, so terms per
//     list and values per expression too: this package (Expand,
//     Requirement, Intersect, FromCSI) and the CRDs' maxItems on the term
//     list and on values; the product of a term's value counts only here,
//     as a schema cannot compute it cheaply.
//   - MaxKeysPerTerm (8) expressions per term, keys per segment: this
//     package and the CRDs' maxItems, which also keeps the CRDs' CEL rule
//     for unique keys within the API server's cost budget.
//   - The driver's requisite and preferred lists: driver/world
//     MaxSegmentsPerRequirement, at least MaxSegments (a test here holds
//     the two together), so everything the controllers send is accepted.
//
// Expansion multiplies value counts, so a few short terms can describe
// millions of segments. Every function that expands or multiplies terms
// stops at MaxSegments with an error wrapping ErrTooManySegments before
// allocating beyond it.
package topology
