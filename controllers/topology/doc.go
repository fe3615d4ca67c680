// Package topology converts, validates, intersects and matches the
// topology constraints of KEP-5943 (topology for volume snapshots). It is
// pure: no API calls, no clocks, no randomness, so every controller that
// needs these rules (snapshotter sidecar, provisioner, scheduler plugin)
// gets exactly the same answer.
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
// term without expressions would select no node (Kubernetes' rule, kept
// by Matches); the converting functions reject such terms as malformed
// rather than guess.
//
// # Bounds
//
// Expansion multiplies value counts, so a few short terms can describe
// millions of segments. Every function that expands or multiplies terms
// stops at MaxSegments with an error wrapping ErrTooManySegments before
// allocating beyond it.
package topology
