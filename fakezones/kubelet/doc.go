// Package kubelet stands in for the kubelets a kwok cluster does not have.
// It runs a zonepath node plugin for every fake node that has the driver,
// all in one process (a node plugin process per node would cost 300
// processes for a 300-node cluster), and registers each plugin the way
// kubelet's CSI plugin registration does: it asks the plugin NodeGetInfo
// over its socket, then
//
//   - adds the driver to the node's CSINode: nodeID, the keys of the
//     plugin's accessible topology, and allocatable.count from
//     max_volumes_per_node (KEP-5030 reads it there);
//   - labels the Node with the plugin's topology segment and records the
//     node ID in the csi.volume.kubernetes.io/nodeid annotation.
//
// A cluster with extra drivers (spec.File.ExtraDrivers) gets a node plugin
// of each on every node with the driver, registered the same way: one
// CSINode entry per driver, and one entry per driver in the annotation.
//
// Like kubelet it creates every node's CSINode, with no drivers, before
// any plugin registers; the cluster file can instead leave a node without
// a CSINode, without the driver, register it late, or register it only
// while the Node carries a label (and deregister it, removing the CSINode
// entry and the node ID, when the label goes, as kubelet does when a
// DaemonSet's node plugin leaves the node).
//
// It must not do anything else kubelet does (no pods, no volumes staged):
// kwok pretends to run pods, and tests that need real mounts use kind.
package kubelet
