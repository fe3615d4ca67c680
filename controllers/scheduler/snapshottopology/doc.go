// Package snapshottopology is the SnapshotTopology scheduler plugin of
// KEP-5943: it keeps a pod off nodes from which a VolumeSnapshot that one
// of its unbound PVCs restores from is not accessible, as recorded in the
// bound VolumeSnapshotContent's spec.nodeAffinity, so that a
// WaitForFirstConsumer PVC is provisioned where its source can be read.
//
// It owns PreFilter (resolving the pod's claims with snapshotapi.Resolver
// over its own informers, and narrowing the nodes to those inside every
// snapshot's topology), Filter, the rejection reasons and the queueing
// hints that retry a pod when an object it waits for changes. mutants.go
// holds test-only switches that only a mutant_* build tag turns on.
//
// It only filters: it must not score nodes, bind or provision volumes,
// write any object, treat a content without a snapshot handle as
// "everywhere", or wait for the API server in a scheduling cycle; it
// leaves bound PVCs to VolumeBinding. With the VolumeSnapshotTopology gate
// off (read once, in New) it is a no-op.
//
// How it decides, its status codes and events:
// controllers/scheduler/README.md.
package snapshottopology
