package driverext

import (
	"fmt"
	"maps"
	"slices"
)

// AttachLimits is the extension file's attachLimits section, for the
// KEP-5030 specs: the limit the driver reports and the nodes that show
// what the scheduler does where the driver is missing. Every node key is
// optional; a spec needing one that is not set skips, naming it.
type AttachLimits struct {
	// MaxVolumesPerNode is the limit the driver reports on every node it
	// is registered on (NodeGetInfo max_volumes_per_node), which kubelet
	// publishes as the CSINode entry's allocatable.count, but for the
	// nodes of NodeLimits. Required, > 0.
	MaxVolumesPerNode int32 `json:"maxVolumesPerNode"`
	// NodeLimits are the nodes whose limit is another, by node name:
	// drivers compute it per node (EBS, Azure Disk and PD by instance
	// type), so one number cannot describe every node. Each > 0.
	NodeLimits map[string]int32 `json:"nodeLimits,omitempty"`
	// NodeWithoutCSINode is a schedulable node that has no CSINode.
	NodeWithoutCSINode string `json:"nodeWithoutCSINode,omitempty"`
	// NodeWithoutDriver is a schedulable node whose CSINode has no entry
	// for the driver.
	NodeWithoutDriver string `json:"nodeWithoutDriver,omitempty"`
	// LateNode is a schedulable node where the driver is registered only
	// once RegisterCommand has run.
	LateNode string `json:"lateNode,omitempty"`
	// RegisterCommand (sh -c, with KUBECONFIG set to the suite's
	// kubeconfig) makes the driver register on LateNode: e.g. labels the
	// node so that the node plugin's DaemonSet lands there.
	RegisterCommand string `json:"registerCommand,omitempty"`
	// UnregisterCommand undoes RegisterCommand: the driver leaves
	// LateNode's CSINode. The spec runs it first, when the driver is
	// registered there, and after itself, so that it can run again.
	UnregisterCommand string `json:"unregisterCommand,omitempty"`
}

// attachLimitsKeys are the section's keys, for the known-keys message.
var attachLimitsKeys = []string{"maxVolumesPerNode", "nodeLimits", "nodeWithoutCSINode", "nodeWithoutDriver", "lateNode", "registerCommand", "unregisterCommand"}

func (a *AttachLimits) validate() error {
	if a.MaxVolumesPerNode <= 0 {
		return fmt.Errorf("attachLimits.maxVolumesPerNode: %d; the section needs the driver's attach limit, > 0", a.MaxVolumesPerNode)
	}
	for _, node := range slices.Sorted(maps.Keys(a.NodeLimits)) {
		if limit := a.NodeLimits[node]; limit <= 0 {
			return fmt.Errorf("attachLimits.nodeLimits.%s: %d; a node's attach limit is > 0 (a node without one needs no entry: the suite cannot tell \"none\" from 0)", node, limit)
		}
	}
	nodes := map[string]string{}
	for _, n := range []struct{ key, name string }{
		{"nodeWithoutCSINode", a.NodeWithoutCSINode}, {"nodeWithoutDriver", a.NodeWithoutDriver}, {"lateNode", a.LateNode},
	} {
		if n.name == "" {
			continue
		}
		if other, ok := nodes[n.name]; ok {
			return fmt.Errorf("attachLimits.%s: node %q is also attachLimits.%s; each case needs its own node", n.key, n.name, other)
		}
		nodes[n.name] = n.key
	}
	hasCommands := a.RegisterCommand != "" && a.UnregisterCommand != ""
	switch {
	case a.LateNode != "" && !hasCommands:
		return fmt.Errorf("attachLimits.lateNode: %q needs registerCommand and unregisterCommand, to register the driver there and to undo it", a.LateNode)
	case a.LateNode == "" && (a.RegisterCommand != "" || a.UnregisterCommand != ""):
		return fmt.Errorf("attachLimits.registerCommand, unregisterCommand: set without lateNode, the node they act on")
	}
	return nil
}

// AttachLimitsMissing is why a KEP-5030 spec cannot run, or "" when it
// can: the section is absent, or one of the keys it needs (node keys and
// commands of the section) is not set.
func (f *File) AttachLimitsMissing(keys ...string) string {
	if f.AttachLimits == nil {
		return "driver ext: attachLimits is not set (the driver's attach limit and the KEP-5030 nodes)"
	}
	values := map[string]string{
		"nodeWithoutCSINode": f.AttachLimits.NodeWithoutCSINode, "nodeWithoutDriver": f.AttachLimits.NodeWithoutDriver,
		"lateNode": f.AttachLimits.LateNode, "registerCommand": f.AttachLimits.RegisterCommand, "unregisterCommand": f.AttachLimits.UnregisterCommand,
	}
	for _, key := range keys {
		if v, known := values[key]; !known || v == "" {
			return fmt.Sprintf("driver ext: attachLimits.%s is not set", key)
		}
	}
	return ""
}

// LimitOf is the attach limit the driver reports on node: its entry of
// NodeLimits, else MaxVolumesPerNode.
func (a *AttachLimits) LimitOf(node string) int32 {
	if limit, ok := a.NodeLimits[node]; ok {
		return limit
	}
	return a.MaxVolumesPerNode
}
