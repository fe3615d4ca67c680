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
// A node registered at start costs two API calls once its Node exists:
// one patch of the Node (every driver's labels and node ID) and one
// create of its CSINode with every driver's entry, so that a cluster of
// thousands of nodes registers in seconds. Kubelet creates the CSINode
// empty before any plugin registers; so does the stand-in for the nodes
// the cluster file says register late or only while the Node carries a
// label (deregistered, the CSINode entry and the node ID removed, when the
// label goes, as kubelet does when a DaemonSet's node plugin leaves the
// node), and for nodes without the driver; a node can also have no
// CSINode at all. One informer on Nodes tells every registration when its
// Node exists and every label follower when its Node changed.
//
// The plugins open node by node while the registrations run, each node
// registering once its own plugins serve. Their state is volatile (no
// fsync): it goes with the cluster, and a thousand plugins waiting on
// their syncs took half a minute to open on a busy disk.
//
// Block volumes there are bind-mounted files (--block-devices=file), not
// loop devices: no container runtime here needs a device node, and
// thousands of node plugins in one process would share the one kernel's
// pool of loop devices for nothing (a host without /dev/loop-control has
// none at all).
//
// It must not do anything else kubelet does (no pods, no volumes staged):
// kwok pretends to run pods, and tests that need real mounts use kind.
package kubelet
