package snapshottopology

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Filter admits a node only if, for every constraint PreFilter found, the
// node's labels satisfy at least one of its terms. A node outside a
// snapshot's topology stays outside whatever pods are preempted, so the
// rejection is UnschedulableAndUnresolvable; the reason names the
// snapshot and not the node, so the scheduler folds all such nodes into
// one line of the pod's event.
func (pl *Plugin) Filter(_ context.Context, cs fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node := nodeInfo.Node()
	if node == nil {
		return fwk.AsStatus(errors.New("node not found"))
	}
	if c := s.rejecting(node.Labels); c != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, c.reasons...)
	}
	return nil
}
