// Package registration registers the zonepath node plugin with kubelet
// through kubelet's plugin registration API
// (k8s.io/kubelet/pkg/apis/pluginregistration/v1), the job the
// node-driver-registrar sidecar does in most CSI deployments. That sidecar
// cannot be built here, so the driver serves the Registration service
// itself: kubelet's plugin watcher finds the socket in its
// plugins_registry directory, asks GetInfo for the driver's name and CSI
// endpoint, registers the driver (NodeGetInfo, then the node's CSINode
// entry) and reports the outcome through NotifyRegistrationStatus.
//
// The flags and their meaning follow node-driver-registrar's, so the
// manifests read the same either way; errors name those flags.
//
// It serves registration only: it must not call the CSI services behind
// the endpoint it advertises, nor import kubelet's implementation
// (k8s.io/kubernetes; kubelettest does, for tests).
package registration
