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
	"k8s.io/apimachinery/pkg/runtime"
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
// cannot place yet (an empty intersection, an EBS-style class in the
// vendor zone key whose terms merge with the snapshot's only into
// segments no node carries, a snapshot not cut yet) must reach the user as
// a ProvisioningFailed Warning event on the claim that says why, be
// retried, and never reach the delegate. One controller serves every
// claim: the lib registers its types in the global scheme whenever a
// controller is built, racing with the event goroutines an earlier
// controller leaves behind.
func TestLibReportsNarrowingFailuresAsEvents(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	cases := []struct {
		name    string // of the claim, its snapshot, content and class
		class   []v1.TopologySelectorTerm
		content func(name string) *unstructured.Unstructured
		want    []string
	}{
		{name: "disjoint", class: classC,
			content: func(name string) *unstructured.Unstructured { return content(name, snapAorD) },
			want:    []string{"do not intersect", `VolumeSnapshotContent "disjoint"`, `VolumeSnapshot "ns/disjoint"`, `StorageClass "disjoint"`}},
		{name: "vendor-keys", class: terms(term(vendorZoneKey, "zone-c")),
			content: func(name string) *unstructured.Unstructured { return content(name, terms(term(zoneKey, "zone-a"))) },
			want: []string{"do not intersect", `VolumeSnapshotContent "vendor-keys"`, `VolumeSnapshot "ns/vendor-keys"`, `StorageClass "vendor-keys"`,
				`no node of driver "zonepath.csi.dev" carries`}},
		{name: "uncut", class: classAB,
			content: func(name string) *unstructured.Unstructured { return uncut(content(name, nil)) },
			want:    []string{`VolumeSnapshotContent "uncut" of VolumeSnapshot "ns/uncut" has no snapshot handle yet`}},
	}
	var objects []runtime.Object
	lookup := &fakeLookup{snapshots: map[string]*snapv1.VolumeSnapshot{}, contents: map[string]*unstructured.Unstructured{}}
	for _, tc := range cases {
		class := storageClass(immediate, tc.class)
		class.Name = tc.name
		pvc := claim(snapshotDataSource(tc.name))
		pvc.Name, pvc.Spec.StorageClassName = tc.name, &class.Name
		pvc.Annotations = map[string]string{"volume.kubernetes.io/storage-provisioner": class.Provisioner}
		objects = append(objects, class, pvc)
		lookup.snapshots[ns+"/"+tc.name] = boundSnapshot(tc.name, tc.name)
		lookup.contents[tc.name] = rebound(tc.content(tc.name), tc.name)
	}
	kube := fake.NewClientset(objects...)
	delegate := &recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	pc := controller.NewProvisionController(ctx, kube, "zonepath.csi.dev", wrapOn(delegate, lookup, kube, driverNodes("zonepath.csi.dev", ebsNodes()...)),
		controller.LeaderElection(false), controller.Threadiness(1), controller.FailedProvisionThreshold(0),
		controller.RateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 50*time.Millisecond)))
	done := make(chan struct{})
	go func() { defer close(done); pc.Run(ctx) }()
	stop := func() { cancel(); <-done }
	defer stop()
	failures := map[string][]v1.Event{}
	for _, tc := range cases {
		failures[tc.name] = waitForFailures(t, ctx, kube, tc.name, 2)
	}
	stop()
	for _, tc := range cases {
		event := failures[tc.name][0]
		for _, want := range tc.want {
			if !strings.Contains(event.Message, want) {
				t.Errorf("%s: event message %q does not contain %q", tc.name, event.Message, want)
			}
		}
		if event.Type != v1.EventTypeWarning {
			t.Errorf("%s: event type %q, want Warning", tc.name, event.Type)
		}
	}
	if delegate.calls != 0 {
		t.Errorf("delegate called %d times, want never", delegate.calls)
	}
}

// waitForFailures returns claim's ProvisioningFailed events once at
// least n attempts failed (the fake recorder aggregates nothing, so each
// retry is one more event).
func waitForFailures(t *testing.T, ctx context.Context, kube *fake.Clientset, claim string, n int) []v1.Event {
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
			if e.Reason == "ProvisioningFailed" && e.InvolvedObject.Name == claim {
				failures = append(failures, e)
				count += max(int(e.Count), 1)
			}
		}
		return count >= n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d ProvisioningFailed events of claim %s: %v (got %d)", n, claim, err, len(failures))
	}
	return failures
}
