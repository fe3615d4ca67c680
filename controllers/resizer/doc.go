// Package resizer is zonepath-resizer: the job of upstream csi-resizer
// (github.com/kubernetes-csi/external-resizer) for any CSI driver, for
// clusters that cannot pull csi-resizer's image. Its Go module is refused
// by the module proxy here, so it cannot run as a library the way
// controllers/snapshotter runs external-snapshotter's controller; this is
// a small controller on client-go instead, speaking the same protocol.
//
// # The protocol
//
// A bound claim's request grows past its volume's capacity; for a CSI
// volume kube-controller-manager only records ExternalExpanding (it sets
// the volume.kubernetes.io/storage-resizer annotation for migrated
// in-tree volumes alone). The resizer of the volume's driver (flag
// --driver-name, else GetPluginInfo) then:
//
//  1. records the target: condition Resizing,
//     status.allocatedResourceStatuses.storage ControllerResizeInProgress,
//     status.allocatedResources.storage the size;
//  2. calls ControllerExpandVolume (nothing for a plugin that expands on
//     nodes only) and writes the answer into the volume's spec.capacity;
//  3. either finishes (status.capacity, conditions and storage status
//     cleared, annotation volume.kubernetes.io/node-expansion-not-required)
//     or, when the plugin says node_expansion_required, hands the claim to
//     kubelet: condition FileSystemResizePending and NodeResizePending,
//     which kubelet's NodeExpander waits for before NodeExpandVolume.
//     Kubelet records the capacity and clears the status.
//
// Failures follow RecoverVolumeExpansionFailure (GA and locked on since
// Kubernetes 1.34, the pinned v1.37.1 included): a call that may still be
// running (timeouts, UNAVAILABLE, ABORTED, RESOURCE_EXHAUSTED) is retried
// at the same size with exponential backoff; other errors add condition
// ControllerResizeError and are retried, a new request replacing the size;
// OUT_OF_RANGE, INVALID_ARGUMENT and NOT_FOUND mark the claim
// ControllerResizeInfeasible and are not retried until the user changes
// the request, which the Warning event says. Kubelet's NodeResizeInfeasible
// hands the claim back. Every step is an event on the claim, with
// upstream's reasons (Resizing, VolumeResizeFailed,
// FileSystemResizeRequired, VolumeResizeSuccessful). A request at or
// below the claim's capacity asks for nothing: volumes are never shrunk.
//
// Status writes go through kube's own pkg/volume/util helpers (the ones
// kubelet writes its side with): strategic merge patches of pvc/status
// carrying the resourceVersion they were computed from.
//
// # ModifyVolume
//
// For a plugin with the controller capability MODIFY_VOLUME, on a server
// that serves storage.k8s.io/v1 VolumeAttributesClasses, a second loop
// (modify.go, with its own queue on the same claim informer) does
// csi-resizer's modify controller's job. A bound claim of the driver whose
// spec.volumeAttributesClassName differs from
// status.currentVolumeAttributesClassName:
//
//  1. a class that does not exist: status.modifyVolumeStatus Pending (the
//     API's "the specified VolumeAttributesClass not existing"); its
//     creation brings the claim back;
//  2. InProgress, then ControllerModifyVolume with the class's parameters
//     as mutable_parameters;
//  3. the volume's spec.volumeAttributesClassName (a merge patch of that
//     field), then the claim's current class, the status cleared.
//
// INVALID_ARGUMENT ("Parameters not supported ... The SP MUST NOT have
// applied any modification", CSI 1.13 ControllerModifyVolume Errors),
// NOT_FOUND and OUT_OF_RANGE, and a class of another driver, make the
// claim Infeasible with a Warning; it is not retried until the claim names
// another class, and naming the current one again clears the status.
// Other errors keep it InProgress, retried with backoff. Events use
// csi-resizer's reasons (VolumeModify, VolumeModifyFailed,
// VolumeModifySuccessful).
//
// # Not here
//
// csi-resizer's pod tracking for drivers that expand offline
// only is not needed by a driver that expands online, so
// --handle-volume-inuse-error is accepted and ignored. Migrated in-tree
// volumes are not supported, nor secrets: a volume naming
// controllerExpandSecretRef gets a Warning event and no call.
package resizer
