package snapshotter

import (
	"context"
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// TestPinnedRequirementAcrossAttempts drives one Snapshotter through a
// sequence of attempts on one content, editing the class between them:
// after an answer that leaves the snapshot's fate unknown the edit is
// ignored (the pin is repeated), after a final answer the class counts
// again, and a pin is written only when it changes.
func TestPinnedRequirementAcrossAttempts(t *testing.T) {
	zone := func(z string) v1.TopologySelectorTerm { return term(regionKey, "r1", zoneKey, z) }
	type attempt struct {
		class    v1.TopologySelectorTerm // the class's allowedTopologies before the attempt
		answer   error                   // the driver's
		wantReq  string                  // requisite sent
		wantPins int                     // pin patches so far
		restart  bool                    // a new Snapshotter (process) before the attempt
	}
	for _, tc := range []struct {
		name     string
		attempts []attempt
	}{
		{name: "timeout, class edited: the retry repeats the pin", attempts: []attempt{
			{class: zone("a"), answer: status.Error(codes.DeadlineExceeded, "lost"), wantReq: "r1/a", wantPins: 1},
			{class: zone("b"), answer: status.Error(codes.DeadlineExceeded, "lost"), wantReq: "r1/a", wantPins: 1},
			{class: zone("b"), wantReq: "r1/a", wantPins: 1},
		}},
		{name: "quota exhausted under our own pin, class edited: the class counts again", attempts: []attempt{
			{class: zone("a"), answer: status.Error(codes.ResourceExhausted, "full"), wantReq: "r1/a", wantPins: 1},
			{class: zone("a"), answer: status.Error(codes.ResourceExhausted, "full"), wantReq: "r1/a", wantPins: 1},
			{class: zone("b"), wantReq: "r1/b", wantPins: 2},
		}},
		{name: "quota exhausted under a pin written before a restart, class edited: the retry repeats the pin", attempts: []attempt{
			{class: zone("a"), answer: status.Error(codes.ResourceExhausted, "full"), wantReq: "r1/a", wantPins: 1},
			{class: zone("a"), answer: status.Error(codes.ResourceExhausted, "full"), wantReq: "r1/a", wantPins: 1, restart: true},
			{class: zone("b"), wantReq: "r1/a", wantPins: 1},
		}},
		{name: "timeout, then quota exhausted, class edited: the retry repeats the pin", attempts: []attempt{
			{class: zone("a"), answer: status.Error(codes.DeadlineExceeded, "lost"), wantReq: "r1/a", wantPins: 1},
			{class: zone("a"), answer: status.Error(codes.ResourceExhausted, "full"), wantReq: "r1/a", wantPins: 1},
			{class: zone("b"), answer: status.Error(codes.ResourceExhausted, "full"), wantReq: "r1/a", wantPins: 1},
			{class: zone("b"), wantReq: "r1/a", wantPins: 1},
		}},
		{name: "misspelt zone (final): unchanged class, pin kept; corrected class, pinned anew", attempts: []attempt{
			{class: zone("x"), answer: status.Error(codes.InvalidArgument, "no zone x"), wantReq: "r1/x", wantPins: 1},
			{class: zone("x"), answer: status.Error(codes.InvalidArgument, "no zone x"), wantReq: "r1/x", wantPins: 1},
			{class: zone("b"), answer: status.Error(codes.DeadlineExceeded, "lost"), wantReq: "r1/b", wantPins: 2},
			{class: zone("a"), wantReq: "r1/b", wantPins: 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
			fake := &fakeCSI{accessibility: true, topology: []*csi.Topology{segment(regionKey, "r1", zoneKey, "a")}}
			client := dynamicClient(contentObj("content", nil), classObj(nil))
			conn := serveCSI(t, fake, fake)
			s := NewSnapshotter(SnapshotterOptions{Conn: conn, DriverName: testDriver, Client: client, Accessibility: true})
			for i, a := range tc.attempts {
				if a.restart {
					s = NewSnapshotter(SnapshotterOptions{Conn: conn, DriverName: testDriver, Client: client, Accessibility: true})
				}
				setClass(t, client, a.class)
				fake.Answer(a.answer)
				_, _, _, _, _, err := s.CreateSnapshot(context.Background(), snapName, "vol-1", createParams(nil), nil)
				if status.Code(err) != status.Code(a.answer) {
					t.Fatalf("attempt %d: error %v, want the driver's %v", i, err, a.answer)
				}
				reqs := fake.Requests()
				if got := requisite(reqs[len(reqs)-1]); got != a.wantReq {
					t.Errorf("attempt %d sent requisite %s, want %s", i, got, a.wantReq)
				}
				if got := pinPatches(client); got != a.wantPins {
					t.Errorf("after attempt %d: %d pin patches, want %d", i, got, a.wantPins)
				}
			}
		})
	}
}

func setClass(t *testing.T, client *dynamicfake.FakeDynamicClient, allowed v1.TopologySelectorTerm) {
	t.Helper()
	classes := client.Resource(snapshotapi.VolumeSnapshotClasses)
	class, err := classes.Get(context.Background(), "class", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	class.Object["allowedTopologies"] = terms(t, allowed)
	if _, err := classes.Update(context.Background(), class, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// requisite renders a request's requisite as region/zone segments.
func requisite(req *csi.CreateSnapshotRequest) string {
	out := ""
	for i, s := range req.GetAccessibilityRequirements().GetRequisite() {
		if i > 0 {
			out += " "
		}
		out += s.GetSegments()[regionKey] + "/" + s.GetSegments()[zoneKey]
	}
	return out
}

func pinPatches(client *dynamicfake.FakeDynamicClient) int {
	n := 0
	for _, a := range client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && isPin(p) {
			n++
		}
	}
	return n
}

// TestPinConflictReadsTheOtherPin: a pin written by someone else between
// our read and our guarded write (a former leader, say) makes our write
// conflict; the content is read again and the other pin is used, not
// overwritten.
func TestPinConflictReadsTheOtherPin(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	theirs := term(regionKey, "r1", zoneKey, "b")
	fake := &fakeCSI{accessibility: true, topology: []*csi.Topology{segment(regionKey, "r1", zoneKey, "b")}}
	client := dynamicClient(contentObj("content", nil), classObj(terms(t, term(regionKey, "r1", zoneKey, "a"))))
	conflicts := 0
	client.PrependReactor("patch", "volumesnapshotcontents", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if !isPin(a.(clienttesting.PatchAction)) || conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		// The fake holds its lock while reactors run: use its tracker.
		obj, err := client.Tracker().Get(snapshotapi.VolumeSnapshotContents, "", "content")
		if err != nil {
			return true, nil, err
		}
		c := obj.(*unstructured.Unstructured)
		c.SetAnnotations(map[string]string{snapshotapi.PinAnnotation: pinOf(t, []v1.TopologySelectorTerm{theirs})})
		c.SetResourceVersion("2")
		if err := client.Tracker().Update(snapshotapi.VolumeSnapshotContents, c, ""); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: snapshotapi.Group, Resource: "volumesnapshotcontents"}, "content", errors.New("changed"))
	})
	s := NewSnapshotter(SnapshotterOptions{Conn: serveCSI(t, fake, fake), DriverName: testDriver, Client: client, Accessibility: true})
	if _, _, _, _, _, err := s.CreateSnapshot(context.Background(), snapName, "vol-1", createParams(nil), nil); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if got := requisite(reqs[0]); got != "r1/b" || conflicts != 1 {
		t.Errorf("requisite %s after %d conflicts, want the other writer's pin r1/b after one", got, conflicts)
	}
	if got := pinPatches(client); got != 1 {
		t.Errorf("%d pin patches, want 1 (the one that conflicted)", got)
	}
}
