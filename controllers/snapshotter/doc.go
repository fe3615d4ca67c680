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
// see from csi-snapshotter. The content is read live with the dynamic
// client (one GET per CreateSnapshot, a rare call), and its class when no
// pin decides (below): the typed client/v8 structs drop nodeAffinity and
// allowedTopologies, and a live read sees an admin's nodeAffinity written
// a moment ago, and the pin an earlier attempt has just written.
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
// # Pinned requirements: no orphan on retry
//
// A CreateSnapshot whose reply is lost (DEADLINE_EXCEEDED) may have cut
// the snapshot, and only a retry with the same name learns its ID (CSI
// spec, "Timeout errors"). Built from the live class, a retry after an
// admin narrowed allowedTopologies asks for zones the snapshot is not in:
// the driver answers ALREADY_EXISTS, which upstream takes as final, the
// content never gets a handle, and deleting the VolumeSnapshot never
// reaches DeleteSnapshot: the backend snapshot and its quota leak. So the
// allowedTopologies of the first attempt are pinned on the content
// (annotation zonepath.csi.dev/pinned-topology, snapshotapi.PinAnnotation)
// before its CSI call, with a merge patch guarded by the resourceVersion
// just read (a conflict re-reads: someone pinned first), and every attempt
// with a pin is built from the pin. The requirement is a function of the
// terms and the snapshot name (topology.Requirement), so requisite and
// preferred repeat exactly. A class without allowedTopologies pins "[]",
// so that adding them later cannot change a retry either.
//
// The pin is removed once the content is ready to use and no longer being
// created (unpin.go, an informer handler on upstream's content informer):
// upstream calls CreateSnapshot until the content is ready, never after.
// After a final CSI error (upstream's isCSIFinalError: nothing was
// created, nothing is in progress) the pin stays, but this process
// remembers that its last call ended final, and the next attempt builds
// the requirement from the class again and re-pins it if it changed: an
// admin's fix of a misspelt zone takes effect. That memory is not written
// to the API on purpose: any change of our annotation passes upstream's
// informer filter (it ignores only the sidecar's own annotations) and
// requeues the content at once, so a content failing for good would loop
// without backoff. After a restart the pin is used once more and its final
// error remembered again. RESOURCE_EXHAUSTED counts as such an end too
// when this process wrote the pin and saw every attempt under it answered
// (no timeout or UNAVAILABLE among them): the driver then says no snapshot
// of the name exists, and none can still appear, so an admin can send a
// snapshot waiting for quota elsewhere by editing the class. After a lost
// reply, or across a restart, it does not: the pin holds until a final
// answer or success. Writing the pin is such a change too: the first
// retry of a content follows its first attempt at once, the later ones
// back off as upstream's do.
//
// With the gate off (or without the plugin capability) nothing is pinned,
// read or removed: no requirement is sent, so none can change.
//
// # A misspelt zone
//
// A driver answers a requisite whose segments name none of its zones with
// INVALID_ARGUMENT (zonepath does, naming the segment). Upstream records
// it in the content's status.error with a SnapshotCreationFailed Warning
// on the content, the snapshot-controller copies status.error to the
// VolumeSnapshot, and, the error being final, upstream removes the
// being-created annotation, so the VolumeSnapshot can be deleted. What
// upstream lacks is an event on the VolumeSnapshot, the object the user
// looks at: CreateSnapshot adds a SnapshotCreationRefused Warning there
// with the driver's message, for INVALID_ARGUMENT while KEP-5943 applies.
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
// allowedTopologies or the pin malformed, the pin not written) or after it
// (see above), is a plain error
// without a gRPC status, which upstream counts as not final: it keeps the
// annotation and retries. An error before the call must not be final
// although it made no CSI request: an earlier attempt may have cut the
// snapshot and lost the reply (DEADLINE_EXCEEDED); until a CreateSnapshot
// with the same name returns its ID, the annotation is all that stops a
// deleted VolumeSnapshot from taking its content along and leaving that
// snapshot on the backend with no content pointing to it. The cost is that
// a VolumeSnapshot whose class (or pin) stays malformed cannot be deleted
// until it is fixed; a pin edited by hand is refused, naming the
// annotation, and removing it hands the decision back to the class.
//
// # Gate off
//
// No requirements, no API reads, no writes: Snapshotter behaves like
// upstream's, and nodeAffinity and pins already stored are left alone.
//
// # Not done
//
// Pre-provisioned contents (spec.source.snapshotHandle) get no
// nodeAffinity from ListSnapshots' accessible_topology: upstream's
// GetSnapshotStatus carries only a snapshot handle, which would need a
// content informer indexed by handle; an admin sets nodeAffinity on such
// contents.
//
// # Group snapshots
//
// Upstream's group snapshot support runs as in csi-snapshotter, under its
// gate CSIVolumeGroupSnapshot (GA, on by default; --groupsnapshot-name-*
// flags), and only when the plugin has GROUP_CONTROLLER_SERVICE. In v8.7.0
// the sidecar calls CreateVolumeGroupSnapshot and writes the
// VolumeGroupSnapshotContent's status; the snapshot-controller creates the
// members' VolumeSnapshotContents afterwards (annotation
// groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle, snapshot handle
// in status), so no Snapshotter call sees a member's content together with
// its accessible_topology. With KEP-5943 on, members.go watches those
// contents on upstream's content informer and records each member's
// accessible_topology, read with ListSnapshots(snapshot_id), exactly as
// CreateSnapshot records a single snapshot's. The content is ready before
// that write lands (the snapshot-controller copies readiness from the
// group), so for a moment a member restores without the constraint; the
// scheduler plugin and provisioner read nodeAffinity when a claim is
// provisioned, so a claim made in that window is not constrained. See
// controllers/README.md, "Group snapshots and topology".
//
// # What it must not do
//
// It owns the Snapshotter behind upstream's sidecar controller, the
// nodeAffinity write, the pin and its removal. It must not change
// upstream's protocol with the snapshot-controller (annotations,
// finalizers, status), write nodeAffinity that is already set, send
// requirements without the gate and the plugin capability, or build a
// retry's requirement from anything but its pin while an earlier call may
// still have created the snapshot.
package snapshotter
