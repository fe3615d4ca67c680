// Package crds produces the snapshot CRDs that KEP-5943 needs: the six
// CRDs of github.com/kubernetes-csi/external-snapshotter/client/v8, read
// from the Go module cache at build or deploy time, with two fields added
// to the schema of every served version:
//
//   - VolumeSnapshotContent spec.nodeAffinity, where the snapshotter sidecar
//     records where the snapshot is accessible, and
//   - VolumeSnapshotClass allowedTopologies, where an admin restricts where
//     snapshots of the class may be accessible.
//
// Both are lists of core TopologySelectorTerm. They must be in the schema:
// the API server prunes fields a structural schema does not declare, so
// without them every write of nodeAffinity would succeed and store nothing.
//
// The schema also validates the terms (minItems, maxItems, patterns and
// CEL rules with messages naming the rule): Kubernetes' StorageClass
// allowedTopologies rules (values required, a key once per term, keys
// label keys) plus what controllers/topology refuses (empty terms, values
// that are not non-empty label values, its bounds). So the API server
// rejects at write time exactly the shapes the snapshotter, provisioner
// and scheduler plugin would refuse later, instead of storing terms that
// match no node; an empty list stays valid and means no constraint.
//
// Nothing from upstream is copied into this repository. Extend decodes the
// two CRDs it changes and writes them back re-encoded (same content, keys
// in sorted order); the other four are copied byte for byte. The upstream
// schema of VolumeSnapshotContent has CEL transition rules on spec, but
// none of them compares spec as a whole, so nodeAffinity stays mutable, as
// the KEP requires (replication to more zones, admin corrections); the
// tests evaluate those rules on an update of nodeAffinity to prove it.
//
// # What it must not do
//
// It writes files only (no API calls: deploy/ and the Makefile install
// the CRDs), and it must not change an upstream field or commit upstream
// CRDs to this repository.
package crds
