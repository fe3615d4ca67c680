package snapshotter

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapshotscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/driver/plugin"
)

const retryStart = 100 * time.Millisecond

// harness runs upstream's sidecar controller with a Snapshotter against
// fake clients. The typed fake holds what upstream reads and writes, the
// dynamic fake what the Snapshotter reads and writes (the typed structs
// cannot hold nodeAffinity); both start with the same content and class.
type harness struct {
	csi     *fakeCSI
	snap    *snapfake.Clientset
	kube    *kubefake.Clientset
	dynamic interface{ Actions() []clienttesting.Action }

	mu  sync.Mutex
	log []string // "nodeAffinity" and "status ready=<bool>" writes, in order
}

// csiTarget is the CSI plugin a harness's Snapshotter calls and the volume
// its content snapshots.
type csiTarget struct {
	conn          *grpc.ClientConn
	driver        string
	volume        string
	accessibility bool
}

func startHarness(t *testing.T, fake *fakeCSI) *harness {
	t.Helper()
	h := startHarnessOn(t, csiTarget{conn: serveCSI(t, fake, fake), driver: testDriver, volume: "vol-1", accessibility: fake.accessibility}, nil)
	h.csi = fake
	return h
}

// The event recorder resolves snapshot objects through client-go's global
// scheme. Their types are added once, before any controller runs:
// upstream's Run returns without waiting for its workers, so adding them
// per harness wrote the scheme while an earlier test's worker still read
// it (a data race that failed make test now and then).
func init() {
	if err := snapshotscheme.AddToScheme(scheme.Scheme); err != nil {
		panic(err)
	}
}

// startHarnessOn runs the controller against p; setup, when set, adds
// reactors to the dynamic client before the controller starts.
func startHarnessOn(t *testing.T, p csiTarget, setup func(*dynamicfake.FakeDynamicClient)) *harness {
	t.Helper()
	// client/v8's generated informers drop the fake clientset's "no
	// WatchList" marker, so the reflector would wait for a bookmark the
	// fake never sends. Real API servers send it.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	h := &harness{snap: snapfake.NewSimpleClientset(), kube: kubefake.NewClientset()}
	content := contentObj("content", nil)
	content.Object["spec"].(map[string]any)["driver"] = p.driver
	content.Object["spec"].(map[string]any)["source"] = map[string]any{"volumeHandle": p.volume}
	class := classObj(nil)
	class.Object["driver"] = p.driver
	class.SetResourceVersion("1")
	dyn := dynamicClient(content, class)
	shareStore(h.snap, dyn)
	dyn.PrependReactor("patch", "volumesnapshotcontents", h.noteOurPatch)
	h.snap.PrependReactor("patch", "volumesnapshotcontents", h.noteUpstreamPatch)
	if setup != nil {
		setup(dyn)
	}
	h.dynamic = dyn
	s := NewSnapshotter(SnapshotterOptions{Conn: p.conn, DriverName: p.driver, Client: dyn, Accessibility: p.accessibility})
	ctrl, err := NewController(h.kube, h.snap, s, Options{
		DriverName: p.driver, Timeout: 5 * time.Second, SnapshotNamePrefix: "snapshot", SnapshotNameUUIDLength: -1,
		Workers: 1, RetryIntervalStart: retryStart, RetryIntervalMax: 10 * retryStart, ResyncPeriod: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ctrl.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func (h *harness) note(what string) clienttesting.ReactionFunc {
	return func(clienttesting.Action) (bool, runtime.Object, error) {
		h.mu.Lock()
		h.log = append(h.log, what)
		h.mu.Unlock()
		return false, nil, nil
	}
}

// noteOurPatch logs the Snapshotter's writes: "nodeAffinity", "pin" and
// "unpin".
func (h *harness) noteOurPatch(a clienttesting.Action) (bool, runtime.Object, error) {
	patch := string(a.(clienttesting.PatchAction).GetPatch())
	switch {
	case strings.Contains(patch, `"nodeAffinity"`):
		h.note("nodeAffinity")(a)
	case strings.Contains(patch, `"`+snapshotapi.PinAnnotation+`":null`):
		h.note("unpin")(a)
	case strings.Contains(patch, snapshotapi.PinAnnotation):
		h.note("pin")(a)
	}
	return false, nil, nil
}

// noteUpstreamPatch logs the writes of upstream's controller that the
// being-created protocol orders: status patches (ready or not, with a
// snapshot handle or not) and the removal of the annotation.
func (h *harness) noteUpstreamPatch(a clienttesting.Action) (bool, runtime.Object, error) {
	patch := string(a.(clienttesting.PatchAction).GetPatch())
	switch {
	case a.GetSubresource() == "status":
		h.note("status ready=" + boolText(strings.Contains(patch, `"readyToUse":true`)))(a)
		if strings.Contains(patch, `"snapshotHandle"`) {
			h.note("snapshotHandle")(a)
		}
	case strings.Contains(patch, `"remove"`) && strings.Contains(patch, "volumesnapshot-being-created"):
		h.note("being-created removed")(a)
	}
	return false, nil, nil
}

func (h *harness) writes() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.log)
}

func (h *harness) content(t *testing.T) *crdv1.VolumeSnapshotContent {
	t.Helper()
	c, err := h.snap.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), "content", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestControllerRecordsTopologyBeforeReady: through upstream's controller,
// the pin is written before the CSI call and nodeAffinity before any
// status patch marks the content ready; once ready, the pin goes.
func TestControllerRecordsTopologyBeforeReady(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	h := startHarness(t, &fakeCSI{accessibility: true, topology: []*csi.Topology{segment(zoneKey, "a")}})
	waitFor(t, "content ready", func() bool { return contentIsReady(h.content(t)) })
	writes := h.writes()
	ready := slices.Index(writes, "status ready=true")
	if i := slices.Index(writes, "nodeAffinity"); i < 0 || i > ready {
		t.Errorf("writes %v: want nodeAffinity before the ready status", writes)
	}
	reqs := h.csi.Requests()
	if reqs[0].GetName() != snapName {
		t.Errorf("snapshot name %q, want %q", reqs[0].GetName(), snapName)
	}
	if _, ok := reqs[0].GetParameters()[utils.PrefixedVolumeSnapshotContentNameKey]; ok {
		t.Error("the driver sees create metadata without --extra-create-metadata")
	}
	waitFor(t, "the being-created annotation and the pin removed from the ready content", func() bool {
		c := h.content(t)
		return !metav1.HasAnnotation(c.ObjectMeta, utils.AnnVolumeSnapshotBeingCreated) && !metav1.HasAnnotation(c.ObjectMeta, snapshotapi.PinAnnotation)
	})
	if writes := h.writes(); slices.Index(writes, "pin") > slices.Index(writes, "status ready=true") {
		t.Errorf("writes %v: want the pin before any status", writes)
	}
}

// TestControllerResourceExhausted: upstream records the driver's message
// in status.error, emits a Warning event, keeps the being-created
// annotation (the error is not final) and retries with exponential
// backoff; no nodeAffinity is written, and the pin written before the
// first attempt stays for the retries. The pin is a change upstream's
// informer passes on, so the first retry follows at once; the backoff
// counts from the second.
func TestControllerResourceExhausted(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	const driverText = "no snapshot quota left in zone-a"
	h := startHarness(t, &fakeCSI{accessibility: true, createCalls: createCalls{Always: status.Error(codes.ResourceExhausted, driverText)}})
	waitFor(t, "five CreateSnapshot attempts", func() bool { reqs := h.csi.Requests(); return len(reqs) >= 5 })
	times := h.csi.Times()
	for i := 2; i < 5; i++ {
		// The i-th retry waits retryStart * 2^(i-2); 10% slack for clocks.
		if gap, min := times[i].Sub(times[i-1]), retryStart<<(i-2)*9/10; gap < min {
			t.Errorf("retry %d after %v, want at least %v (exponential backoff)", i, gap, min)
		}
	}
	c := h.content(t)
	if c.Status == nil || c.Status.Error == nil || c.Status.Error.Message == nil || !strings.Contains(*c.Status.Error.Message, driverText) {
		t.Errorf("status = %+v, want status.error with %q", c.Status, driverText)
	}
	if !metav1.HasAnnotation(c.ObjectMeta, utils.AnnVolumeSnapshotBeingCreated) || !metav1.HasAnnotation(c.ObjectMeta, snapshotapi.PinAnnotation) {
		t.Errorf("annotations %v: the being-created annotation and the pin must stay after RESOURCE_EXHAUSTED, which is not final", c.Annotations)
	}
	waitFor(t, "a Warning event with the driver's message", func() bool { return hasWarning(t, h, driverText) })
	if writes := h.writes(); slices.Contains(writes, "nodeAffinity") || slices.Contains(writes, "unpin") {
		t.Errorf("writes %v: nodeAffinity written although CreateSnapshot failed, or the pin removed while an attempt may run", writes)
	}
	if writes := h.writes(); !slices.Contains(writes, "pin") {
		t.Errorf("writes %v: no pin before the first attempt", writes)
	}
}

func hasWarning(t *testing.T, h *harness, text string) bool {
	events, err := h.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		// The first attempt's reason, then that of retries after a status was written.
		failed := e.Reason == "SnapshotCreationFailed" || e.Reason == "SnapshotContentCheckandUpdateFailed"
		if e.Type == corev1.EventTypeWarning && failed && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

// lostReply makes the driver cut the first snapshot it is asked for and
// answer DEADLINE_EXCEEDED, as when the sidecar's timeout ends first.
const lostReply = `
rules:
- name: lost-reply
  match:
    rpc: CreateSnapshot
    count: 1
  action:
    code: DeadlineExceeded
    when: after
`

// failContentGet makes the dynamic client's nth GET of a content fail
// with an API-server error.
func failContentGet(nth int32) func(*dynamicfake.FakeDynamicClient) {
	return func(dyn *dynamicfake.FakeDynamicClient) {
		var gets atomic.Int32
		dyn.PrependReactor("get", "volumesnapshotcontents", func(clienttesting.Action) (bool, runtime.Object, error) {
			if gets.Add(1) == nth {
				return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
			}
			return false, nil, nil
		})
	}
}

// waitReadyKeepingMarker waits for the content to be ready and checks the
// being-created protocol: the annotation is removed only after the
// snapshot handle is on the content. Removed earlier, a VolumeSnapshot
// deleted in between would let upstream drop the content without a handle
// while a snapshot may exist on the backend.
func waitReadyKeepingMarker(t *testing.T, h *harness) string {
	t.Helper()
	// Upstream removes the annotation in a patch of its own after the
	// ready status, so wait for both before judging their order.
	waitFor(t, "content ready and no longer being created", func() bool {
		c := h.content(t)
		return contentIsReady(c) && !metav1.HasAnnotation(c.ObjectMeta, utils.AnnVolumeSnapshotBeingCreated)
	})
	writes := h.writes()
	handle := slices.Index(writes, "snapshotHandle")
	if removed := slices.Index(writes, "being-created removed"); handle < 0 || removed < handle {
		t.Errorf("writes %v: the being-created annotation was removed before the snapshot handle was recorded", writes)
	}
	return *h.content(t).Status.SnapshotHandle
}

// TestControllerRetriesAPIErrorBeforeCSI: reading the content fails once
// before any CSI call. Nothing says whether an earlier CreateSnapshot is
// still running, so the error is not final: upstream records it
// (status.error, Warning event), keeps the being-created annotation and
// retries, and the retry cuts the snapshot.
func TestControllerRetriesAPIErrorBeforeCSI(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	fake := &fakeCSI{accessibility: true, topology: []*csi.Topology{segment(zoneKey, "a")}}
	h := startHarnessOn(t, csiTarget{conn: serveCSI(t, fake, fake), driver: testDriver, volume: "vol-1", accessibility: true}, failContentGet(1))
	if handle := waitReadyKeepingMarker(t, h); handle != "snap-id-"+snapName {
		t.Errorf("status.snapshotHandle = %q, want snap-id-%s", handle, snapName)
	}
	waitFor(t, "a Warning event with the API error", func() bool { return hasWarning(t, h, "etcd leader changed") })
	if reqs := fake.Requests(); len(reqs) != 1 {
		t.Errorf("driver got %d CreateSnapshot calls, want 1 (none before the API error)", len(reqs))
	}
}

// TestControllerLostReplyThenAPIError: the real driver cuts the snapshot
// but its reply is lost (DEADLINE_EXCEEDED, CSI spec "Timeout errors": the
// CO retries with the same name), and the retry first meets an API-server
// error reading the content. The snapshot of the first call exists on the
// backend the whole time, so the annotation must stay until the retry
// learns its ID; in the end the backend holds exactly one snapshot and the
// content's status.snapshotHandle names it.
func TestControllerLostReplyThenAPIError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	conn, volID := startZonepath(t, zonepathConfig{faults: lostReply})
	h := startHarnessOn(t, csiTarget{conn: conn, driver: plugin.DefaultName, volume: volID, accessibility: true}, failContentGet(2))
	handle := waitReadyKeepingMarker(t, h)
	for _, text := range []string{"lost-reply", "etcd leader changed"} {
		waitFor(t, "a Warning event with "+text, func() bool { return hasWarning(t, h, text) })
	}
	rsp, err := csi.NewControllerClient(conn).ListSnapshots(context.Background(), &csi.ListSnapshotsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rsp.GetEntries()) != 1 || rsp.GetEntries()[0].GetSnapshot().GetSnapshotId() != handle {
		t.Errorf("backend snapshots %v, want exactly the one the content records, %q", rsp.GetEntries(), handle)
	}
}
