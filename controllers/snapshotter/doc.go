// Package snapshotter is zonepath's CSI snapshotter sidecar: upstream
// csi-snapshotter's sidecar controller (external-snapshotter v8.7.0, run
// unchanged as a library) with its CSI interface swapped for Snapshotter,
// which adds KEP-5943 behind the VolumeSnapshotTopology feature gate.
//
// It owns: the Snapshotter behind upstream's controller; turning a
// VolumeSnapshotClass's allowedTopologies into CreateSnapshot's
// accessibility requirements; recording the driver's accessible_topology
// in a VolumeSnapshotContent's spec.nodeAffinity, group snapshot members
// included (members.go); the pin that makes a retry repeat its first
// call's requirement (pin.go, unpin.go); the SnapshotCreationRefused event.
//
// It must not change upstream's protocol with the snapshot-controller
// (annotations, finalizers, status), write nodeAffinity that is already
// set, send requirements without the gate and the plugin capability
// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS, or build a retry's requirement from
// anything but its pin while an earlier call may still have created the
// snapshot. With the gate off it behaves as upstream's and leaves stored
// nodeAffinity and pins alone. One exception, gate on or off: a group
// member's content that upstream's snapshot-controller reset to not ready
// after the sidecar saw it ready gets status.readyToUse back once the
// driver says the snapshot is ready (members.go markMemberReady; the same
// write the sidecar makes, guarded by resourceVersion), since upstream
// v8.7.0 never looks at it again (controllers/README.md, "Members that are
// ready late").
//
// Why it is built this way, the pin's life, errors and what is not done:
// controllers/README.md, "zonepath-snapshotter".
package snapshotter
