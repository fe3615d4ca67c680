package provisioner

import (
	"context"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/workqueue"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
)

// TestLibReportsNarrowingFailuresAsEvents runs the lib's
// ProvisionController over a fake API server: a claim that narrowing
// cannot place yet (an empty intersection, a snapshot not cut yet) must
// reach the user as a ProvisioningFailed Warning event on the claim that
// says why, be retried, and never reach the delegate.
func TestLibReportsNarrowingFailuresAsEvents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		class   []v1.TopologySelectorTerm
		content *unstructured.Unstructured
		want    []string
	}{
		{name: "empty intersection", class: classC, content: content("snapcontent-x", snapAorD),
			want: []string{"do not intersect", `VolumeSnapshotContent "snapcontent-x"`, `VolumeSnapshot "ns/snap"`, `StorageClass "sc"`}},
		{name: "snapshot not cut yet", class: classAB, content: uncut(content("snapcontent-x", nil)),
			want: []string{`VolumeSnapshotContent "snapcontent-x" of VolumeSnapshot "ns/snap" has no snapshot handle yet`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
			class := storageClass(immediate, tc.class)
			pvc := claim(snapshotDataSource("snap"))
			pvc.Annotations = map[string]string{"volume.kubernetes.io/storage-provisioner": class.Provisioner}
			kube := fake.NewClientset(class, pvc)
			lookup := &fakeLookup{
				snapshots: map[string]*snapv1.VolumeSnapshot{ns + "/snap": boundSnapshot("snap", "snapcontent-x")},
				contents:  map[string]*unstructured.Unstructured{"snapcontent-x": tc.content},
			}
			delegate := &recorder{}
			failures := runLib(t, kube, New(delegate, lookup), class.Provisioner)
			for _, want := range tc.want {
				if !strings.Contains(failures[0].Message, want) {
					t.Errorf("event message %q does not contain %q", failures[0].Message, want)
				}
			}
			if failures[0].Type != v1.EventTypeWarning || delegate.calls != 0 {
				t.Errorf("event type %q, delegate called %d times; want Warning and never", failures[0].Type, delegate.calls)
			}
		})
	}
}

// runLib runs the lib's controller with p until the claim has failed
// twice (so it was retried) and returns its ProvisioningFailed events.
func runLib(t *testing.T, kube *fake.Clientset, p controller.Provisioner, name string) []v1.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pc := controller.NewProvisionController(ctx, kube, name, p,
		controller.LeaderElection(false), controller.Threadiness(1), controller.FailedProvisionThreshold(0),
		controller.RateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 50*time.Millisecond)))
	done := make(chan struct{})
	go func() { defer close(done); pc.Run(ctx) }()
	defer func() { cancel(); <-done }()
	return waitForFailures(t, ctx, kube, 2)
}

// waitForFailures returns the claim's ProvisioningFailed events once at
// least n attempts failed (the fake recorder aggregates nothing, so each
// retry is one more event).
func waitForFailures(t *testing.T, ctx context.Context, kube *fake.Clientset, n int) []v1.Event {
	t.Helper()
	var failures []v1.Event
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		failures = failures[:0]
		count := 0
		for _, e := range events.Items {
			if e.Reason == "ProvisioningFailed" && e.InvolvedObject.Name == "restore" {
				failures = append(failures, e)
				count += max(int(e.Count), 1)
			}
		}
		return count >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d ProvisioningFailed events: %v (got %d)", n, err, len(failures))
	}
	return failures
}
