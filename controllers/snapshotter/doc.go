// Package snapshotter is zonepath's CSI snapshotter sidecar: the job of the
// upstream csi-snapshotter for any CSI driver, plus KEP-5943 (topology for
// volume snapshots) behind the VolumeSnapshotTopology feature gate.
//
// # Why the upstream controller runs unchanged
//
// The sidecar's protocol with the common snapshot-controller (annotations
// such as snapshot.storage.kubernetes.io/volumesnapshot-being-created,
// finalizers, status and error status, events, deletion and
// pre-provisioned contents, retry with exponential backoff) is subtle and
// versioned with the snapshot-controller. Re-implementing it would fork
// that protocol. So NewController builds upstream's
// pkg/sidecar-controller (external-snapshotter v8.7.0) as a Go dependency
// and only swaps its narrow CSI interface, pkg/snapshotter.Snapshotter,
// for Snapshotter here, which calls CSI directly. Everything KEP-5943 adds
// happens inside Snapshotter.CreateSnapshot, which the upstream controller
// calls before it writes status, so a content is never marked ready
// without its nodeAffinity.
//
// # Finding the VolumeSnapshotContent
//
// The Snapshotter interface passes the CSI snapshot name, not the content.
// NewController always turns on upstream's extra create metadata, so the
// parameters carry csi.storage.k8s.io/volumesnapshotcontent/name: the
// exact content, with no index and no reconstruction of upstream's name
// rule (prefix, UID, --snapshot-name-uuid-length truncation). Snapshotter
// strips the three metadata keys again before calling the driver unless
// --extra-create-metadata asked for them, so drivers see what they would
// see from csi-snapshotter. The content and its class are read live with
// the dynamic client (one GET each per CreateSnapshot, a rare call): the
// typed client/v8 structs drop nodeAffinity and allowedTopologies, and a
// live read sees an admin's nodeAffinity written a moment ago.
//
// # Requirements
//
// With the gate on and the plugin capability SNAPSHOT_ACCESSIBILITY_CONSTRAINTS
// (a plugin capability from GetPluginCapabilities, probed once at start),
// the class's allowedTopologies become accessibility_requirements through
// topology.Requirement: requisite AND preferred. The KEP's sketch sets only
// preferred, but preferred is a hint a driver may ignore, while
// allowedTopologies "restricts" where snapshots are accessible; only a
// requisite obliges the driver to honour it or fail with
// RESOURCE_EXHAUSTED. Preferred holds the same segments, rotated by the
// snapshot name, so snapshots spread over the allowed zones and one
// snapshot gets the same order on every retry. Without the capability the
// CSI spec forbids the field, so nothing is sent and nothing is recorded.
//
// # Recording accessible_topology
//
// The response's accessible_topology is converted losslessly
// (topology.FromCSI: one term per segment, so {r1,a},{r2,b} never admits
// {r2,a}) and written to spec.nodeAffinity with snapshotapi.NodeAffinityPatch,
// a merge patch touching nothing else, carrying the content's
// resourceVersion as a precondition. It is written only when the content
// has no nodeAffinity: the field is mutable for admins (replication,
// corrections), and whoever set it knows more than a creation-time answer;
// on a retry after a lost status update the value is already the driver's.
// An empty list (nodeAffinity: []) counts as none, as it does for the
// provisioner and the scheduler, so it never hides the driver's answer.
// A conflict re-reads the content and re-decides. A failed write, or an
// accessible_topology that is not valid label data, is returned as an
// error after the snapshot was cut: upstream keeps the being-created
// annotation (the error is not a final gRPC error), records it in
// status.error with a Warning event, and retries CreateSnapshot, which is
// idempotent. An empty accessible_topology writes nothing: absent
// nodeAffinity already means "accessible everywhere".
//
// # Errors
//
// CSI errors are returned as they are, so upstream sees their gRPC code
// (its isCSIFinalError: CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE,
// RESOURCE_EXHAUSTED and ABORTED keep the being-created annotation; other
// codes remove it) and status.error keeps the driver's message. Every
// other error, before the CSI call (content or class not readable,
// allowedTopologies malformed) or after it (see above), is a plain error
// without a gRPC status, which upstream counts as not final: it keeps the
// annotation and retries. An error before the call must not be final
// although it made no CSI request: an earlier attempt may have cut the
// snapshot and lost the reply (DEADLINE_EXCEEDED); until a CreateSnapshot
// with the same name returns its ID, the annotation is all that stops a
// deleted VolumeSnapshot from taking its content along and leaving that
// snapshot on the backend with no content pointing to it. The cost is that a VolumeSnapshot whose
// class stays malformed cannot be deleted until the class is fixed.
//
// # Gate off
//
// No requirements, no API reads, no writes: Snapshotter behaves like
// upstream's, and nodeAffinity already stored is left alone.
//
// # Not done
//
// Pre-provisioned contents (spec.source.snapshotHandle) get no
// nodeAffinity from ListSnapshots' accessible_topology: upstream's
// GetSnapshotStatus carries only a snapshot handle, which would need a
// content informer indexed by handle; an admin sets nodeAffinity on such
// contents. Group snapshots are off.
//
// # What it must not do
//
// It owns the Snapshotter behind upstream's sidecar controller and the
// nodeAffinity write. It must not change upstream's protocol with the
// snapshot-controller (annotations, finalizers, status), write
// nodeAffinity that is already set, or send requirements without the
// gate and the plugin capability.
package snapshotter
