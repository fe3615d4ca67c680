// Package snapshotapi is what zonepath's controllers know of the snapshot
// API beyond the typed clients: the two fields KEP-5943 adds
// (VolumeSnapshotContent spec.nodeAffinity and VolumeSnapshotClass
// allowedTopologies), read from unstructured objects because the typed
// structs drop them, and written with merge patches (NodeAffinityPatch);
// Resolver, the one answer to "where can this claim be restored" for the
// scheduler plugin and the provisioner (claim → VolumeSnapshot → content,
// ReferenceGrants for another namespace, *Error with a Reason); and the
// pin (PinAnnotation) that fixes a create call's topology for its retries.
//
// It owns the field paths, their decoding, the resolution and the pin's
// format. It must not interpret topology terms beyond validating them
// (controllers/topology does), build whole-object updates, or make API
// calls other than the reads of Live; when a pin is written and removed
// is the snapshotter's and the provisioner's.
//
// Why: controllers/README.md, "The snapshot API beyond the typed clients".
package snapshotapi
