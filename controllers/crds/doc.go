// Package crds produces the snapshot CRDs that KEP-5943 needs: the six
// CRDs of github.com/kubernetes-csi/external-snapshotter/client/v8, read
// from the Go module cache at build or deploy time, with
// VolumeSnapshotContent spec.nodeAffinity and VolumeSnapshotClass
// allowedTopologies (lists of core TopologySelectorTerm) added to the
// schema of every served version, validated as controllers/topology
// validates them. Extend re-encodes the two CRDs it changes; the other
// four are copied byte for byte.
//
// It writes files only (no API calls: deploy/ and the Makefile install
// the CRDs), and it must not change an upstream field, make nodeAffinity
// immutable, or commit upstream CRDs to this repository.
//
// Why the fields must be in the schema and what it validates:
// controllers/README.md, "The extended CRDs".
package crds
