package snapshottopology

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// The test-only mutations do what e2e/cmd/mutants says they do.
func TestMutationRejectFirstAttemptOnly(t *testing.T) {
	rejectFirstAttemptOnly = true
	t.Cleanup(func() { rejectFirstAttemptOnly = false })
	e := newEnv(t, pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a")))
	pod := podWith("p", claimVol("c"))
	pod.UID = types.UID("uid-reject-first-only")
	nodes := []fwk.NodeInfo{nodeInfo("n", zoneNode("r1", "b"))}
	cs := framework.NewCycleState()
	if _, st := e.pl.PreFilter(context.Background(), cs, pod, nodes); !st.IsSuccess() {
		t.Fatalf("first attempt: PreFilter %v %q, want success (Filter then rejects)", st.Code(), st.Reasons())
	}
	if st := e.pl.Filter(context.Background(), cs, pod, nodes[0]); st.IsSuccess() {
		t.Fatal("first attempt: Filter admitted a node outside the snapshot's topology")
	}
	if _, st := e.pl.PreFilter(context.Background(), framework.NewCycleState(), pod, nodes); st.Code() != fwk.Skip {
		t.Fatalf("second attempt: PreFilter %v, want Skip (the mutation)", st.Code())
	}
}

func TestMutationNoDeletionRequeue(t *testing.T) {
	requeueOnDeletion = false
	t.Cleanup(func() { requeueOnDeletion = true })
	e := newEnv(t, pvc("c", "snap"))
	runHints(t, e, e.pl.isSchedulableAfterSnapshotChange, []hintCase{
		{name: "being deleted", oldObj: vs("snap", "content"), newObj: beingDeleted(vs("snap", "content")), want: fwk.QueueSkip},
		{name: "deleted", oldObj: vs("snap", "content"), want: fwk.QueueSkip},
	})
	events, err := e.pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if ev.Event.ActionType&fwk.Delete != 0 {
			t.Errorf("%s registered although the mutation never requeues after a deletion", ev.Event.Label())
		}
	}
}
