// Package kubelet stands in for the kubelets a kwok cluster does not have.
// It runs a zonepath node plugin (and one of each extra driver) for every
// fake node that has the driver, all in one process, and registers each
// the way kubelet's CSI plugin registration does: the CSINode entry
// (nodeID, topology keys, allocatable.count from max_volumes_per_node, as
// KEP-5030 reads it), the Node's topology labels and the node ID
// annotation; late and label-following registrations as the cluster file
// says.
//
// It must not do anything else kubelet does (no pods, no volumes staged):
// kwok pretends to run pods, and tests that need real mounts use kind. Why
// one process, volatile plugin state and file-backed block volumes:
// fakezones/README.md, "The kubelet stand-in".
package kubelet
