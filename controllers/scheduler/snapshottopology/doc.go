// Package snapshottopology is the SnapshotTopology scheduler plugin of
// KEP-5943: it keeps a pod off nodes from which a VolumeSnapshot that one
// of its PVCs restores from is not accessible, so that a
// WaitForFirstConsumer PVC is provisioned where its source can be read.
//
// # What it checks
//
// PreFilter follows every PVC of the pod (by claim name, and generic
// ephemeral volumes by their derived name, which must be owned by the
// pod) that is not bound yet and restores a snapshot.storage.k8s.io
// VolumeSnapshot, to the VolumeSnapshotContent the snapshot is bound to,
// and caches that content's spec.nodeAffinity in the cycle state,
// compiled for Filter. The following is snapshotapi.Resolver's, the
// provisioner's too, so both give one answer: dataSourceRef wins over
// dataSource when set, and a dataSourceRef into another namespace is
// refused, naming nothing there, unless Kubernetes'
// CrossNamespaceVolumeDataSource gate is on (read once, in New) and a
// ReferenceGrant there allows it; with the gate on, the plugin watches
// ReferenceGrants too. Filter then admits a node only
// if its labels satisfy at least one term of every such nodeAffinity.
// PreFilter also returns the names of the nodes that do, so that the
// scheduler filters only those rather than every node of the cluster for
// a pod that fits one zone; when none of them is a node the pod's own
// required node affinity admits, it returns no node set, so that Filter's
// reasons, which name the snapshot, explain the rejection.
// Bound PVCs are left to the VolumeBinding plugin: their volume exists and
// carries its own nodeAffinity. An empty nodeAffinity restricts nothing,
// and PreFilter returns Skip for a pod without any restricting snapshot,
// so Filter costs such pods nothing.
//
// With the VolumeSnapshotTopology gate off (read once, in New), the plugin
// is a no-op: PreFilter skips every pod, no informer is started, no event
// is registered, and nodeAffinity that already exists is not enforced.
//
// # Status codes
//
// Every rejection is UnschedulableAndUnresolvable, with a reason that
// names the object: a missing PVC, VolumeSnapshot or content; a snapshot
// not bound to a content yet; a content bound to another snapshot; a
// content whose snapshot is not cut yet; a malformed nodeAffinity; a
// refused cross-namespace dataSourceRef; and, in Filter, a node outside a
// snapshot's topology. None of them can be fixed by preempting pods, and
// each is retried on the event that can fix it rather than by the
// five-minute flush, except a refused reference fixed by a new
// ReferenceGrant, which registers no event. Lister failures other than
// "not found" (the resolver's Unavailable) are Errors, which back off and
// retry.
//
// A dynamically provisioned content has no nodeAffinity until the
// snapshotter has cut the snapshot and written the driver's answer, so
// until the content has a snapshot handle (status.snapshotHandle, or
// spec.source.snapshotHandle for a pre-provisioned one) its topology
// counts as unknown, not as "everywhere". This relies on the snapshotter
// writing nodeAffinity no later than the snapshot handle.
//
// # Events
//
// Custom resources are registered as "<plural>.<version>.<group>"
// resources (volumesnapshots.v1.snapshot.storage.k8s.io and
// volumesnapshotcontents.v1.snapshot.storage.k8s.io); for those the
// scheduler starts informers of its own dynamic informer factory and runs
// the plugin's queueing hints on their Add, Update and Delete events. The
// hints queue a pod only for its own objects and only for changes the
// plugin reads: a snapshot added or rebound; a content added or changed in
// its snapshot reference, snapshot handle or nodeAffinity; a snapshot or
// content deleted (its deletionTimestamp set, or gone), which makes no
// pod schedulable but changes the reason the pod must show: a held
// deletion still restores, and the reason says "being deleted"; a PVC of
// the pod added, bound, or with another source; a node added or
// relabelled that now satisfies every snapshot topology of the pod.
//
// # Test-only mutations
//
// mutants.go holds two switches that break the plugin on purpose, for the
// e2e suite's mutants (make e2e-mutants): no retry after a deletion, and
// filtering a pod's first attempt only. Only a build with the tag that
// names one turns it on (mutant_*.go); make build never sets those tags. The scheduler's
// ClusterRole must allow list and watch of both snapshot resources.
//
// The framework handle does not expose the scheduler's dynamic informer
// factory, so PreFilter reads the snapshots through informers of the
// plugin's own (started and synced in New). Because the scheduler's and
// the plugin's informers may see a change at slightly different times,
// the plugin also activates the pending pods that use a snapshot when its
// own informer sees a relevant change: see addActivationHandlers.
//
// # What it must not do
//
// It only filters: it must not score nodes, bind or provision volumes,
// or write any object, and it leaves bound PVCs to VolumeBinding.
package snapshottopology
