// Package provisioner is zonepath's external-provisioner: the upstream
// kubernetes-csi external-provisioner v6.3.0 controller library, run by
// sig-storage-lib-external-provisioner v13, with the one KEP-5943 change
// the upstream release does not have yet. For a PVC with Immediate binding
// restored from a VolumeSnapshot whose VolumeSnapshotContent has
// spec.nodeAffinity, the volume must be created where the snapshot is
// accessible and the StorageClass allows: snapshot nodeAffinity ∩
// StorageClass allowedTopologies, or a clear event when that is empty.
//
// # How: narrowing the StorageClass upstream sees
//
// Provisioner wraps the controller.Provisioner that upstream's
// NewCSIProvisioner returns. Before delegating, it replaces
// ProvisionOptions.StorageClass by a copy whose allowedTopologies are the
// intersection (topology.Intersect). Upstream then builds the CSI
// requirement exactly as it does for any class with allowedTopologies.
// Read in pkg/controller/topology.go (GenerateAccessibilityRequirements),
// with no selected node:
//   - requisite = flatten(allowedTopologies): each term's cartesian
//     product, terms ORed, sorted and deduplicated. That is lossless per
//     term, the same set topology.Expand produces, so the per-segment terms
//     that topology.FromCSI writes stay apart;
//   - preferred = the requisite rotated by a hash of the claim name
//     (StatefulSet spreading);
//   - nothing else is intersected: CSINodes/Nodes are only aggregated when
//     allowedTopologies is empty, --immediate-topology only matters then,
//     and --strict-topology only with a selected node.
//
// So the narrowed class reaches CreateVolume unchanged, which
// TestUpstreamReceivesIntersection checks against the real upstream code
// and the real zonepath driver. Two consequences are deliberate: a class
// without allowedTopologies is narrowed to the snapshot's terms (upstream
// would otherwise send every CSINode topology, or with
// --immediate-topology=false none at all, and the driver could pick a
// zone the snapshot cannot be restored in), and a snapshot term naming a
// zone without nodes can be chosen, exactly as a class term could.
//
// With a selected node (WaitForFirstConsumer) nothing changes: the
// SnapshotTopology scheduler plugin already chose a node inside the
// snapshot's topology, and upstream builds the requirement from that node.
// Without the gate, and for clones and plain volumes, the wrapper reads
// nothing and passes the options through; a content without nodeAffinity
// (or with nodeAffinity: []) passes them through too.
//
// # One answer with the scheduler
//
// The claim is followed to its snapshot's content by snapshotapi.Resolver,
// the one the SnapshotTopology plugin uses: dataSourceRef wins over
// dataSource when set (Kubernetes' precedence), a dataSourceRef into
// another namespace is refused with a message that names nothing there
// (this binary refuses upstream's CrossNamespaceVolumeDataSource gate, so
// no ReferenceGrant is ever read), and the same failures carry the same
// words in the claim's ProvisioningFailed events as in the pod's
// FailedScheduling ones.
//
// # Not known yet is not "everywhere"
//
// The snapshotter writes a content's nodeAffinity before its snapshot
// handle, so a content without a handle (status.snapshotHandle, or
// spec.source.snapshotHandle when pre-provisioned) has no known topology
// yet, as the scheduler plugin reads it too. Narrowing then fails and the
// lib retries the claim with a ProvisioningFailed event saying so, instead
// of provisioning it unconstrained.
//
// The VolumeSnapshot and its content are read live from the API server
// (snapshotapi.Live), not from informer caches: the decision creates a
// volume, and a cached copy that lags behind the snapshotter's write would
// miss the nodeAffinity while upstream, reading live a moment later,
// finds the snapshot ready and provisions. Confirming a cached copy is
// current would cost the same GET, so there is no cache: two GETs per
// attempt of an Immediate-binding restore, which upstream's provisioner
// makes live for every restore anyway (getSnapshotSource).
//
// # Pinned topology: no orphan on retry
//
// A CreateVolume whose reply is lost (DEADLINE_EXCEEDED) may have created
// the volume; the lib keeps such a claim "in background" and retries it,
// from its cached copy even after the claim is deleted, and only a retry
// with the same name learns the volume's ID. Narrowed from the live
// content, a retry after an admin changed nodeAffinity asks for zones the
// volume is not in: ALREADY_EXISTS, final for upstream, no PV is ever
// made and the volume leaks. So the allowedTopologies handed upstream for
// a restore are pinned before upstream can call CreateVolume with them,
// in memory by claim UID and on the claim (annotation
// zonepath.csi.dev/pinned-topology, a merge patch guarded by the claim's
// resourceVersion), and every retry hands upstream the pin instead. The
// memory covers what the annotation cannot: a retry before the lib's
// informer has seen the write, and a deleted claim retried from the lib's
// cache. The annotation covers a restart or a new leader. A class whose
// terms are not narrowed is pinned too ("[]" when it has none), so that
// nodeAffinity added later cannot change a retry either.
//
// The pin ends with its claim's provisioning: the memory when the delegate
// succeeds, or when a deleted claim is no longer retried by the lib (its
// claimsInProgress rules: in background until finished); the annotation
// when the claim is bound (Watch, an informer handler), not when Provision
// returns: the lib saves the PV after Provision, in the background, and a
// process killed before the save provisions the claim again, from the pin.
// After a final CSI error (upstream's checkError: a gRPC code other than
// CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE and ABORTED; nothing runs) the
// next attempt decides from the objects again, so an admin's fix (a
// misspelt zone in nodeAffinity corrected) takes effect; an unchanged
// answer is not written again, because every write of the annotation is a
// claim update the lib requeues at once, past its backoff. A failure
// before any CSI call keeps the pin: an earlier call may still have
// created the volume.
//
// Not covered, because the lib keeps no durable record of it: a claim
// deleted while its CreateVolume is in background, and the provisioner
// restarted before the retry. The lib's claimsInProgress is memory, so
// the new process never retries the deleted claim, pin or not, and a
// volume the lost call created stays on the backend (upstream's gap; an
// orphan audit of the driver's ListVolumes finds it).
//
// A misspelt zone that reaches CreateVolume is INVALID_ARGUMENT from
// zonepath, which the lib reports on the claim as a ProvisioningFailed
// Warning with the driver's message and retries slowly ("infeasible");
// being final, the claim can be deleted with nothing left behind. Nothing
// is added to that.
//
// The lib finds optional behaviour by type assertion (Qualifier,
// BlockProvisioner, DeletionGuard; v13 has no ProvisionerExt), so the
// wrapper implements all three and forwards, answering the lib's own
// defaults where the delegate lacks one. TestWrapperHasEveryUpstreamMethod
// fails if an upstream upgrade adds a method the wrapper does not have.
//
// # Why wrap rather than re-implement
//
// Measured on the pinned sources (lines, then lines without comments and
// blank lines): this package's wrapper (provisioner.go, narrow.go,
// pin.go) is 451 / 299. It reuses upstream pkg/controller controller.go
// 2140 / 1633 and topology.go 743 / 485, tested upstream by 9570 lines of
// controller_test.go and topology_test.go, and the lib's controller 2179 /
// 1540. A re-implementation would have to reproduce secrets templating,
// fsType and volume-mode rules, VolumeAttributesClass, clone and snapshot
// source checks and finalizers, capacity and rescheduling states, PV
// construction and deletion, each a place to diverge from what users of
// csi-provisioner expect. Wrapping keeps all of it upstream's, unchanged,
// and confines our change to one input that upstream already treats as
// authoritative. It is also the shape the KEP describes (intersect, then
// hand the result to the existing allowedTopologies path), so moving to an
// upstream release with the feature is deleting this wrapper.
//
// The cost: upstream reads the VolumeSnapshot and content again, so each
// Immediate-binding restore attempt makes two more GETs (none while a pin
// decides), and an admin's change of nodeAffinity between our read and
// upstream's is seen at its older value for one attempt. Both are
// acceptable: restores are rare next to the API traffic of a cluster,
// nodeAffinity changes rarely once written, and the driver still refuses a
// restore outside the snapshot's topology. Pinning adds a patch of the
// claim before the first attempt and one when it is bound.
//
// # Storage capacity
//
// With --enable-capacity, Run wires upstream's capacity controller
// (pkg/capacity, pkg/capacity/topology, pkg/owner) as csi-provisioner's
// main does for a central controller, with the same flags and defaults
// (capacity.go): one CSIStorageCapacity per segment of the driver (from
// the CSINodes and Nodes that have it) and WaitForFirstConsumer class, in
// $NAMESPACE, owned by the object --capacity-ownerref-level levels above
// the pod $POD_NAME (-1: none, as fake zones run it: they run processes,
// not pods). Upstream's provision wrapper refreshes a segment's objects
// after each volume created or deleted there; it sits between our wrapper
// and upstream's provisioner. Left out: the v1beta1 fallback (the v1 API
// is in every cluster zonepath supports) and per-node deployment.
//
// # What it must not do
//
// It owns one input of upstream's controller, the StorageClass it sees,
// and the pin of that input. It must not build CSI requests or PVs itself,
// read the snapshot or its content from an informer cache (see above), or
// hand upstream anything but the pin while an earlier CreateVolume may
// have created the volume.
package provisioner
