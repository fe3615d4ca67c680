// Package provisioner is zonepath's external-provisioner: upstream's
// external-provisioner v6.3.0 controller library, run by
// sig-storage-lib-external-provisioner v13, wrapped so that a PVC with
// Immediate binding restored from a snapshot is provisioned inside
// snapshot nodeAffinity ∩ StorageClass allowedTopologies (KEP-5943,
// behind the VolumeSnapshotTopology feature gate), or gets an event
// saying why it cannot be. With --enable-capacity it also runs upstream's
// capacity controller (capacity.go).
//
// It owns one input of upstream's controller, the StorageClass it sees
// (narrowed with topology.Intersect, the snapshot resolved with
// snapshotapi.Resolver over live reads, combinations of keys no node of
// the driver carries dropped), and the pin of that input, in memory and on
// the claim, so that a retry repeats its first call.
//
// It must not build CSI requests or PVs itself, read the snapshot or its
// content from an informer cache (a lagging copy would provision outside
// the snapshot's topology), or hand upstream anything but the pin while
// an earlier CreateVolume may have created the volume. Claims with a
// selected node, clones and plain volumes pass through unnarrowed.
//
// Why it wraps rather than re-implements, the pin's life and its gaps:
// controllers/README.md, "zonepath-provisioner".
package provisioner
