package snapshottopology

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// TestGateOff: with VolumeSnapshotTopology off, nothing is enforced, even
// for a pod every snapshot of which is broken or restricted, and the
// scheduler is asked to watch nothing.
func TestGateOff(t *testing.T) {
	e := newEnvGate(t, false,
		pvc("lost", "gone"),
		pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a")))
	ctx := context.Background()
	for _, pod := range []*v1.Pod{podWith("p1", claimVol("lost")), podWith("p2", claimVol("c"))} {
		cs := framework.NewCycleState()
		if _, st := e.pl.PreFilter(ctx, cs, pod, nil); st.Code() != fwk.Skip {
			t.Errorf("%s: PreFilter got %v %q, want Skip", pod.Name, st.Code(), st.Reasons())
		}
		if _, st, _ := e.fw.RunPreFilterPlugins(ctx, cs, pod); !st.IsSuccess() {
			t.Errorf("%s: framework PreFilter got %v %q", pod.Name, st.Code(), st.Message())
		}
		if st := e.fw.RunFilterPlugins(ctx, cs, pod, nodeInfo("n", zoneNode("r1", "b"))); !st.IsSuccess() {
			t.Errorf("%s: framework Filter got %v %q, want success", pod.Name, st.Code(), st.Message())
		}
	}
	if events, err := e.pl.EventsToRegister(ctx); err != nil || len(events) != 0 {
		t.Errorf("EventsToRegister = %v, %v; want none", events, err)
	}
}

func TestNewWithoutKubeConfig(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	h, err := frameworkruntime.NewFramework(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), nil, h); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("New without kubeconfig: %v, want an error about the kubeconfig", err)
	}
}

// TestActivation: when the plugin's own informer sees a change a hint
// would queue for, the pending pods using that snapshot are activated;
// scheduled pods, pods of other snapshots and irrelevant changes are not.
func TestActivation(t *testing.T) {
	scheduled := podWith("scheduled", claimVol("c"))
	scheduled.Spec.NodeName = "n1"
	e := newEnv(t,
		pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a")),
		pvc("d", "other"),
		podWith("waiting", claimVol("c")), podWith("unrelated", claimVol("d")), scheduled,
		podWith("ephemeral", ephemeralVol("data", "snap")))
	ctx := context.Background()
	contents := e.dyn.Resource(snapshotapi.VolumeSnapshotContents)
	update := func(u *unstructured.Unstructured) {
		t.Helper()
		u.SetResourceVersion("")
		if _, err := contents.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// First an update the plugin ignores, then one it acts on: the
	// informer delivers them in order, so seeing the second's activation
	// proves the first caused none.
	update(with(vsc("content", "snap", zones("a")), func(o map[string]any) {
		o["status"].(map[string]any)["readyToUse"] = true
	}))
	update(vsc("content", "snap", zones("a", "b")))
	want := []string{"default/ephemeral", "default/waiting"}
	var got []string
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got = e.activator.activated()
		return len(got) >= len(want), nil
	}) // on timeout, the comparison below says what was activated
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("activated %q, want %q", got, want)
	}
}
