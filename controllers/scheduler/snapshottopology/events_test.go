package snapshottopology

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// hintCase is one event for a hint function; oldObj is nil for an add.
type hintCase struct {
	name           string
	pod            *v1.Pod
	oldObj, newObj any
	want           fwk.QueueingHint
	wantErr        bool
}

func runHints(t *testing.T, e *env, fn fwk.QueueingHintFn, tests []hintCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			pod := tc.pod
			if pod == nil {
				pod = podWith("p", claimVol("c"))
			}
			got, err := fn(logger, pod, tc.oldObj, tc.newObj)
			if (err != nil) != tc.wantErr {
				t.Errorf("error %v, want error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// with returns a deep copy of u changed by f.
func with(u *unstructured.Unstructured, f func(obj map[string]any)) *unstructured.Unstructured {
	c := u.DeepCopy()
	f(c.Object)
	return c
}

func TestSnapshotHint(t *testing.T) {
	e := newEnv(t, pvc("c", "snap"))
	relabelled := with(vs("snap", "content"), func(o map[string]any) {
		o["metadata"].(map[string]any)["labels"] = map[string]any{"x": "y"}
	})
	runHints(t, e, e.pl.isSchedulableAfterSnapshotChange, []hintCase{
		{name: "pod's snapshot added", newObj: vs("snap", ""), want: fwk.Queue},
		{name: "other snapshot added", newObj: vs("other", "k"), want: fwk.QueueSkip},
		{name: "pod's snapshot bound", oldObj: vs("snap", ""), newObj: vs("snap", "content"), want: fwk.Queue},
		{name: "pod's snapshot rebound", oldObj: vs("snap", "content"), newObj: vs("snap", "content2"), want: fwk.Queue},
		{name: "pod's snapshot relabelled", oldObj: vs("snap", "content"), newObj: relabelled, want: fwk.QueueSkip},
		{name: "other snapshot bound", oldObj: vs("other", ""), newObj: vs("other", "k"), want: fwk.QueueSkip},
		{name: "ephemeral template's snapshot before its PVC exists", pod: podWith("eph", ephemeralVol("data", "snap")), newObj: vs("snap", ""), want: fwk.Queue},
		{name: "not unstructured", newObj: &v1.Pod{}, want: fwk.Queue, wantErr: true},
		// Deletions make no pod schedulable, but its reason must be
		// rewritten (scenarios 7a/7b).
		{name: "pod's snapshot being deleted", oldObj: vs("snap", "content"), newObj: beingDeleted(vs("snap", "content")), want: fwk.Queue},
		{name: "pod's deleting snapshot updated again", oldObj: beingDeleted(vs("snap", "content")), newObj: with(beingDeleted(vs("snap", "content")), func(o map[string]any) {
			o["metadata"].(map[string]any)["finalizers"] = []any{"x"}
		}), want: fwk.QueueSkip},
		{name: "pod's snapshot deleted", oldObj: vs("snap", "content"), want: fwk.Queue},
		{name: "pod's snapshot deleted, tombstone", oldObj: cache.DeletedFinalStateUnknown{Key: "default/snap", Obj: vs("snap", "content")}, want: fwk.Queue},
		{name: "other snapshot deleted", oldObj: vs("other", "k"), want: fwk.QueueSkip},
		{name: "no object", want: fwk.Queue, wantErr: true},
	})
}

func TestContentHint(t *testing.T) {
	e := newEnv(t, pvc("c", "snap"))
	widened := vsc("content", "snap", zones("a", "b"))
	ready := with(vsc("content", "snap", zones("a")), func(o map[string]any) {
		o["status"].(map[string]any)["readyToUse"] = true
	})
	runHints(t, e, e.pl.isSchedulableAfterContentChange, []hintCase{
		{name: "content of pod's snapshot added", newObj: vsc("content", "snap", zones("a")), want: fwk.Queue},
		{name: "content of other snapshot added", newObj: vsc("k", "other", zones("a")), want: fwk.QueueSkip},
		{name: "nodeAffinity widened", oldObj: vsc("content", "snap", zones("a")), newObj: widened, want: fwk.Queue},
		{name: "nodeAffinity set", oldObj: vsc("content", "snap"), newObj: widened, want: fwk.Queue},
		{name: "nodeAffinity removed", oldObj: widened, newObj: vsc("content", "snap"), want: fwk.Queue},
		{name: "snapshot cut", oldObj: uncut(vsc("content", "snap")), newObj: vsc("content", "snap"), want: fwk.Queue},
		{name: "ready, topology unchanged", oldObj: vsc("content", "snap", zones("a")), newObj: ready, want: fwk.QueueSkip},
		{name: "rebound to pod's snapshot", oldObj: vsc("content", "other", zones("a")), newObj: vsc("content", "snap", zones("a")), want: fwk.Queue},
		{name: "other snapshot's nodeAffinity widened", oldObj: vsc("k", "other", zones("a")), newObj: vsc("k", "other", zones("a", "b")), want: fwk.QueueSkip},
		{name: "not unstructured", newObj: "content", want: fwk.Queue, wantErr: true},
		{name: "content being deleted", oldObj: vsc("content", "snap", zones("a")), newObj: beingDeleted(vsc("content", "snap", zones("a"))), want: fwk.Queue},
		{name: "content deleted", oldObj: vsc("content", "snap", zones("a")), want: fwk.Queue},
		{name: "other snapshot's content deleted", oldObj: vsc("k", "other", zones("a")), want: fwk.QueueSkip},
	})
}

func TestClaimHint(t *testing.T) {
	e := newEnv(t)
	ephPod := podWith("eph", ephemeralVol("data", "snap"))
	otherNS := pvc("c", "snap")
	otherNS.Namespace = "other"
	relabelled := pvc("c", "snap")
	relabelled.Labels = map[string]string{"x": "y"}
	runHints(t, e, e.pl.isSchedulableAfterClaimChange, []hintCase{
		{name: "pod's PVC added", newObj: pvc("c", "snap"), want: fwk.Queue},
		{name: "pod's PVC without snapshot added", newObj: pvc("c", ""), want: fwk.Queue},
		{name: "other PVC added", newObj: pvc("d", "snap"), want: fwk.QueueSkip},
		{name: "same name in another namespace", newObj: otherNS, want: fwk.QueueSkip},
		{name: "ephemeral PVC added", pod: ephPod, newObj: ownedBy(pvc("eph-data", "snap"), ephPod), want: fwk.Queue},
		{name: "pod's PVC bound", oldObj: pvc("c", "snap"), newObj: bound(pvc("c", "snap")), want: fwk.Queue},
		{name: "pod's PVC relabelled", oldObj: pvc("c", "snap"), newObj: relabelled, want: fwk.QueueSkip},
		{name: "not a PVC", newObj: &v1.Node{}, want: fwk.Queue, wantErr: true},
	})
}

func TestNodeHint(t *testing.T) {
	e := newEnv(t, pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a")), pvc("lost", "gone"))
	node := func(zone string, extra ...string) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: zoneNode("r1", zone)}}
		for _, l := range extra {
			n.Labels[l] = "true"
		}
		return n
	}
	runHints(t, e, e.pl.isSchedulableAfterNodeChange, []hintCase{
		{name: "node added inside", newObj: node("a"), want: fwk.Queue},
		{name: "node added outside", newObj: node("b"), want: fwk.QueueSkip},
		{name: "node moved inside", oldObj: node("b"), newObj: node("a"), want: fwk.Queue},
		{name: "node inside relabelled", oldObj: node("a"), newObj: node("a", "gpu"), want: fwk.QueueSkip},
		{name: "node moved outside", oldObj: node("a"), newObj: node("b"), want: fwk.QueueSkip},
		{name: "pod whose snapshot is missing", pod: podWith("p", claimVol("lost")), newObj: node("a"), want: fwk.QueueSkip},
		{name: "not a node", newObj: &v1.Pod{}, want: fwk.Queue, wantErr: true},
	})
}

func TestEventsToRegister(t *testing.T) {
	e := newEnv(t)
	events, err := e.pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[fwk.EventResource]fwk.ActionType{}
	for _, ev := range events {
		if ev.QueueingHintFn == nil {
			t.Errorf("%s has no queueing hint", ev.Event.Label())
		}
		got[ev.Event.Resource] = ev.Event.ActionType
	}
	want := map[fwk.EventResource]fwk.ActionType{
		"volumesnapshots.v1.snapshot.storage.k8s.io":        fwk.Add | fwk.Update | fwk.Delete,
		"volumesnapshotcontents.v1.snapshot.storage.k8s.io": fwk.Add | fwk.Update | fwk.Delete,
		fwk.PersistentVolumeClaim:                           fwk.Add | fwk.Update,
		fwk.Node:                                            fwk.Add | fwk.UpdateNodeLabel,
	}
	if len(got) != len(want) {
		t.Errorf("registered %v, want %v", got, want)
	}
	for r, at := range want {
		if got[r] != at {
			t.Errorf("%s: action %v, want %v", r, got[r], at)
		}
	}
	// The scheduler turns such names into the resource of a dynamic
	// informer with schema.ParseResourceArg.
	for r, gvr := range map[fwk.EventResource]schema.GroupVersionResource{
		snapshotEvents: snapshotapi.VolumeSnapshots, contentEvents: snapshotapi.VolumeSnapshotContents,
	} {
		if parsed, _ := schema.ParseResourceArg(string(r)); parsed == nil || *parsed != gvr {
			t.Errorf("%s parses as %v, want %v", r, parsed, gvr)
		}
	}
}
