package snapshottopology

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// stateKey is where PreFilter leaves the pod's constraints for Filter.
const stateKey fwk.StateKey = "PreFilter" + Name

// constraint is one snapshot-sourced PVC whose content restricts where
// the pod may run, compiled for Filter.
type constraint struct {
	source
	match matcher
	// reasons is Filter's rejection message, built once per cycle. Its
	// capacity equals its length so that a Status appending to it copies
	// it instead of writing into the shared array.
	reasons []string
}

// state is the PreFilter result. Nothing changes it after PreFilter (the
// plugin has no AddPod/RemovePod), so clones share it.
type state struct {
	constraints []constraint
}

func (s *state) Clone() fwk.StateData { return s }

// PreFilter resolves the pod's unbound snapshot-sourced PVCs to their
// contents' nodeAffinity once per cycle. It skips the pod (and so Filter)
// when the gate is off, when no PVC restores from a snapshot, and when no
// such snapshot restricts topology.
func (pl *Plugin) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !pl.enabled || retried(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	sources, st := pl.podSources(ctx, pod)
	if !st.IsSuccess() {
		return nil, st
	}
	s := newState(sources)
	klog.FromContext(ctx).V(5).Info("Snapshot sources resolved", "pod", klog.KObj(pod), "sources", len(sources), "constraints", len(s.constraints))
	if len(s.constraints) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cs.Write(stateKey, s)
	return s.nodesInside(pod, nodes), nil
}

// nodesInside narrows the scheduler's search to the nodes inside every
// constraint, so that no filter runs on the others. A pod restoring a
// zonal snapshot fits one zone's nodes, so the scheduler never reaches
// its quota of feasible nodes early, and without the narrowing it passes
// every node of the cluster through the filters to find them
// (controllers/scheduler/README.md, "Throughput", says what the measurement
// found; bench/README.md has its figures).
//
// The framework reports every node a PreFilter result leaves out as
// "didn't satisfy plugin(s) [SnapshotTopology]", without the reason that
// names the snapshot. So it returns nil, letting Filter reject each node
// with that reason, unless some node inside also satisfies the pod's own
// required node affinity: where none does, the snapshot's topology is
// what keeps the pod off the nodes it may otherwise use, and the user
// must read which snapshot.
func (s *state) nodesInside(pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.PreFilterResult {
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	names := sets.New[string]()
	reachable := false
	for _, n := range nodes {
		node := n.Node()
		if node == nil || s.rejecting(node.Labels) != nil {
			continue
		}
		names.Insert(node.Name)
		if !reachable {
			// Match errs only on a malformed affinity, which
			// NodeAffinity's own PreFilter rejects first.
			reachable, _ = required.Match(node)
		}
	}
	if !reachable {
		return nil
	}
	return &fwk.PreFilterResult{NodeNames: names}
}

// rejecting is the first constraint a node with these labels is outside
// of, or nil.
func (s *state) rejecting(labels map[string]string) *constraint {
	for i := range s.constraints {
		if c := &s.constraints[i]; !c.match.matches(labels) {
			return c
		}
	}
	return nil
}

// PreFilterExtensions returns nil: other pods on a node do not change
// where a snapshot is accessible.
func (pl *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// newState keeps the sources that restrict topology: an empty
// nodeAffinity admits every node.
func newState(sources []source) *state {
	s := &state{}
	for _, src := range sources {
		if len(src.terms) == 0 {
			continue
		}
		reason := bounded(fmt.Sprintf("node(s) outside the topology of VolumeSnapshot %q (content %q%s): %s",
			src.snapshot.String(), src.content, deletionNote(src.deleting), describe(src.terms)))
		s.constraints = append(s.constraints, constraint{source: src, match: compile(src.terms), reasons: []string{reason}})
	}
	return s
}

func readState(cs fwk.CycleState) (*state, error) {
	data, err := cs.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycle state (is %s enabled at PreFilter?): %w", stateKey, Name, err)
	}
	s, ok := data.(*state)
	if !ok {
		return nil, fmt.Errorf("cycle state %q holds %T, not %T", stateKey, data, s)
	}
	return s, nil
}
