// Package snapshotapi is what zonepath's controllers know of the snapshot
// API beyond the typed clients: the two fields KEP-5943 adds
// (VolumeSnapshotContent spec.nodeAffinity and VolumeSnapshotClass
// allowedTopologies), the one resolver from a claim to the topology of the
// snapshot it restores, and the pin that fixes a create call's topology
// for its retries.
//
// # The KEP-5943 fields
//
// The typed clients of github.com/kubernetes-csi/external-snapshotter/client/v8
// do not know these fields yet, and decoding into their structs drops them.
// So every zonepath controller reads the fields from unstructured objects
// (dynamic clients and informers) and writes nodeAffinity with a JSON merge
// patch that touches nothing else: a whole-object update built from the
// typed structs would silently strip nodeAffinity written by someone else.
//
// # One resolver: claim → VolumeSnapshot → content
//
// The SnapshotTopology scheduler plugin and the provisioner ask the same
// question, "where can this claim be restored", and Resolver gives both
// one answer:
//   - the source: dataSourceRef when set, else dataSource (SourceOf), the
//     precedence of k8s.io/api core/v1 PersistentVolumeClaimSpec;
//   - another namespace: refused unless the component's
//     CrossNamespaceVolumeDataSource gate is on and a ReferenceGrant in
//     that namespace lets claims of the claim's namespace refer to the
//     snapshot. Nothing there is read before that, and a refusal names
//     nothing there (no snapshot, content or topology);
//   - the snapshot must be bound, its content must point back at it (name
//     and uid) and be cut (a snapshot handle in status or spec): the
//     snapshotter writes nodeAffinity no later than the handle, so before
//     it an absent nodeAffinity means "not known yet", not "everywhere";
//   - the content's nodeAffinity must be valid topology terms.
//
// Failures are *Error with a Reason, so the scheduler maps them to
// statuses (Unavailable to Error, the rest to UnschedulableAndUnresolvable)
// and the provisioner to its errors, both with the same message. Objects
// come through a Reader: Listers over informer caches for the scheduler,
// which must not wait for the API server in a scheduling cycle, Live over
// the API server for the provisioner, which decides from them where a
// volume is created for good.
//
// # The pin
//
// PinAnnotation records the allowedTopologies a create call was built
// from, before that call, on the object it is made for (a
// VolumeSnapshotContent, a PersistentVolumeClaim); retries are built from
// it. Pin, PinValue and PinPatch read and write it; when it is written and
// removed is the controllers' (packages snapshotter and provisioner).
//
// # What it must not do
//
// It owns the field paths, their decoding, the resolution and the pin's
// format. It must not interpret topology terms beyond validating them
// (controllers/topology does), build whole-object updates, or make API
// calls other than the reads of Live.
package snapshotapi
