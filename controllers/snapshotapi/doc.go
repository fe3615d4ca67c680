// Package snapshotapi reads and writes the two fields KEP-5943 adds to the
// snapshot API: VolumeSnapshotContent spec.nodeAffinity and
// VolumeSnapshotClass allowedTopologies.
//
// The typed clients of github.com/kubernetes-csi/external-snapshotter/client/v8
// do not know these fields yet, and decoding into their structs drops them.
// So every zonepath controller reads the fields from unstructured objects
// (dynamic clients and informers) and writes nodeAffinity with a JSON merge
// patch that touches nothing else: a whole-object update built from the
// typed structs would silently strip nodeAffinity written by someone else.
//
// It owns the field paths, the decoding of those two fields and the patch
// that writes nodeAffinity. It makes no API calls and must not interpret
// the terms (controllers/topology does) or build whole-object updates.
package snapshotapi
