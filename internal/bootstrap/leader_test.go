package bootstrap

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
)

func testElection(name string) *LeaderElection {
	return &LeaderElection{
		Client: fake.NewClientset(), Namespace: "ns", Name: "lock", Identity: name,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 100 * time.Millisecond,
		Health: leaderelection.NewLeaderHealthzAdaptor(time.Second),
	}
}

// holder is the Lease's holder, "" when released or absent.
func holder(t *testing.T, le *LeaderElection) string {
	t.Helper()
	lease, err := le.Client.CoordinationV1().Leases(le.Namespace).Get(context.Background(), le.Name, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// TestLeaderElectionReleasesOnCancel: when ctx ends (SIGTERM) the work
// stops first, and only then is the Lease released (holder emptied), so
// the next leader takes over at once without overlapping this one.
func TestLeaderElectionReleasesOnCancel(t *testing.T) {
	le := testElection("pod-a")
	ctx, cancel := context.WithCancel(context.Background())
	var heldWhenWorkStopped atomic.Value
	workErr := errors.New("work's own error")
	done := make(chan error)
	go func() {
		done <- le.Run(ctx, func(ctx context.Context) error {
			cancel() // SIGTERM, once leading
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // draining
			heldWhenWorkStopped.Store(holder(t, le))
			return workErr
		})
	}()
	select {
	case err := <-done:
		if !errors.Is(err, workErr) {
			t.Errorf("Run() = %v, want the work's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	if got := heldWhenWorkStopped.Load(); got != "pod-a" {
		t.Errorf("holder while draining = %q, want pod-a (lease kept until the work stopped)", got)
	}
	if got := holder(t, le); got != "" {
		t.Errorf("holder after Run = %q, want \"\" (released on cancel)", got)
	}
}

// TestLeaderElectionStoppedBeforeLeading: ctx ending while another
// process holds the Lease ends the campaign without running the work.
func TestLeaderElectionStoppedBeforeLeading(t *testing.T) {
	other := testElection("pod-b")
	otherCtx, stopOther := context.WithCancel(context.Background())
	defer stopOther()
	leading := make(chan struct{})
	go other.Run(otherCtx, func(ctx context.Context) error { close(leading); <-ctx.Done(); return nil })
	<-leading

	le := testElection("pod-a")
	le.Client = other.Client
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	ran := false
	if err := le.Run(ctx, func(context.Context) error { ran = true; return nil }); err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	if ran || holder(t, le) != "pod-b" {
		t.Errorf("work ran = %v, holder %q; want false, pod-b", ran, holder(t, le))
	}
}

// TestLeaderElectionLost: a leader that cannot renew (here: the API
// server refuses every update) stops its work and says why.
func TestLeaderElectionLost(t *testing.T) {
	le := testElection("pod-a")
	client := le.Client.(*fake.Clientset)
	var unreachable atomic.Bool
	client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if unreachable.Load() {
			return true, nil, errors.New("API server unreachable")
		}
		return false, nil, nil
	})
	err := le.Run(context.Background(), func(ctx context.Context) error {
		unreachable.Store(true)
		<-ctx.Done()
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "lost the lease ns/lock") {
		t.Errorf("Run() = %v, want lost the lease ns/lock", err)
	}
}

// TestLockName: Lease names spelt as csi-lib-utils spells them, so that
// a lease keeps its name when one sidecar replaces the other.
func TestLockName(t *testing.T) {
	for in, want := range map[string]string{
		"zonepath-csi-dev": "zonepath-csi-dev",
		"external-snapshotter-leader-zonepath.csi.dev": "external-snapshotter-leader-zonepath-csi-dev",
		"driver/with_underscore.":                      "driver-with-underscore-X",
	} {
		if got := LockName(in); got != want {
			t.Errorf("LockName(%q) = %q, want %q", in, got, want)
		}
	}
}
