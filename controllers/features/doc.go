// Package features declares the feature gate behind every KEP-5943
// behaviour in zonepath's controllers, so that the snapshotter sidecar, the
// provisioner and the scheduler plugin agree on its name, stage and default.
//
// The gate is registered in k8s.io/apiserver's DefaultMutableFeatureGate,
// the gate kube-scheduler already parses from --feature-gates; the sidecars
// add the same gate's flag to their own flag sets, so every binary takes
// --feature-gates=VolumeSnapshotTopology=true.
//
// It owns the gate's name, stage, default and registration, nothing else:
// it must not hold behaviour behind the gate (each component decides what
// the gate turns on) nor add flags (each command does).
package features
