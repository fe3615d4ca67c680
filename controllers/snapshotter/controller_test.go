package snapshotter

import (
	"context"
	"slices"
	"strconv"
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
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/zonepath/zonepath/controllers/features"
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

func startHarness(t *testing.T, fake *fakeCSI) *harness {
	t.Helper()
	// client/v8's generated informers drop the fake clientset's "no
	// WatchList" marker, so the reflector would wait for a bookmark the
	// fake never sends. Real API servers send it.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	if err := snapshotscheme.AddToScheme(scheme.Scheme); err != nil {
		t.Fatal(err)
	}
	h := &harness{csi: fake, snap: snapfake.NewSimpleClientset(typedContent(), typedClass()), kube: kubefake.NewClientset()}
	h.snap.PrependReactor("*", "*", clienttesting.ObjectReaction(&rvTracker{ObjectTracker: h.snap.Tracker()}))
	dyn := dynamicClient(contentObj("content", nil), classObj(nil))
	dyn.PrependReactor("patch", "volumesnapshotcontents", h.note("nodeAffinity"))
	h.snap.PrependReactor("patch", "volumesnapshotcontents", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			h.note("status ready=" + boolText(strings.Contains(string(a.(clienttesting.PatchAction).GetPatch()), `"readyToUse":true`)))(a)
		}
		return false, nil, nil
	})
	h.dynamic = dyn
	s := NewSnapshotter(SnapshotterOptions{Conn: serveCSI(t, fake, fake), DriverName: testDriver, Client: dyn, Accessibility: fake.accessibility})
	ctrl, err := NewController(h.kube, h.snap, s, Options{
		DriverName: testDriver, Timeout: 5 * time.Second, SnapshotNamePrefix: "snapshot", SnapshotNameUUIDLength: -1,
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

// rvTracker gives every write a new metadata.resourceVersion, as the API
// server does. The fake's tracker keeps the writer's, so upstream's
// informer filter would take every write for a resync and requeue at
// once, hiding the backoff this test checks.
type rvTracker struct {
	clienttesting.ObjectTracker
	rv atomic.Int64
}

func (t *rvTracker) bump(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	m.SetResourceVersion(strconv.FormatInt(100+t.rv.Add(1), 10))
	return nil
}

func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	if err := t.bump(obj); err != nil {
		return err
	}
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	if err := t.bump(obj); err != nil {
		return err
	}
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *rvTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	if err := t.bump(obj); err != nil {
		return err
	}
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

func (h *harness) note(what string) clienttesting.ReactionFunc {
	return func(clienttesting.Action) (bool, runtime.Object, error) {
		h.mu.Lock()
		h.log = append(h.log, what)
		h.mu.Unlock()
		return false, nil, nil
	}
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

func typedContent() *crdv1.VolumeSnapshotContent {
	handle, class := "vol-1", "class"
	return &crdv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "content", ResourceVersion: "1"},
		Spec: crdv1.VolumeSnapshotContentSpec{
			Driver: testDriver, DeletionPolicy: crdv1.VolumeSnapshotContentDelete,
			Source:                  crdv1.VolumeSnapshotContentSource{VolumeHandle: &handle},
			VolumeSnapshotClassName: &class,
			VolumeSnapshotRef:       corev1.ObjectReference{Name: "snap", Namespace: "default", UID: "uid-1"},
		},
	}
}

func typedClass() *crdv1.VolumeSnapshotClass {
	return &crdv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "class", ResourceVersion: "1"}, Driver: testDriver, DeletionPolicy: crdv1.VolumeSnapshotContentDelete}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestControllerRecordsTopologyBeforeReady: through upstream's controller,
// nodeAffinity is written before any status patch marks the content ready.
func TestControllerRecordsTopologyBeforeReady(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	h := startHarness(t, &fakeCSI{accessibility: true, topology: []*csi.Topology{segment(zoneKey, "a")}})
	waitFor(t, "content ready", func() bool {
		c := h.content(t)
		return c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
	})
	writes := h.writes()
	ready := slices.Index(writes, "status ready=true")
	if i := slices.Index(writes, "nodeAffinity"); i < 0 || i > ready {
		t.Errorf("writes %v: want nodeAffinity before the ready status", writes)
	}
	reqs, _ := h.csi.calls()
	if reqs[0].GetName() != snapName {
		t.Errorf("snapshot name %q, want %q", reqs[0].GetName(), snapName)
	}
	if _, ok := reqs[0].GetParameters()[utils.PrefixedVolumeSnapshotContentNameKey]; ok {
		t.Error("the driver sees create metadata without --extra-create-metadata")
	}
	if c := h.content(t); metav1.HasAnnotation(c.ObjectMeta, utils.AnnVolumeSnapshotBeingCreated) {
		t.Error("being-created annotation left on a ready content")
	}
}

// TestControllerResourceExhausted: upstream records the driver's message
// in status.error, emits a Warning event, keeps the being-created
// annotation (the error is not final) and retries with exponential
// backoff; no nodeAffinity is written.
func TestControllerResourceExhausted(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	const driverText = "no snapshot quota left in zone-a"
	h := startHarness(t, &fakeCSI{accessibility: true, err: status.Error(codes.ResourceExhausted, driverText)})
	waitFor(t, "four CreateSnapshot attempts", func() bool { reqs, _ := h.csi.calls(); return len(reqs) >= 4 })
	_, times := h.csi.calls()
	for i := 1; i < 4; i++ {
		// The i-th retry waits retryStart * 2^(i-1); 10% slack for clocks.
		if gap, min := times[i].Sub(times[i-1]), retryStart<<(i-1)*9/10; gap < min {
			t.Errorf("retry %d after %v, want at least %v (exponential backoff)", i, gap, min)
		}
	}
	c := h.content(t)
	if c.Status == nil || c.Status.Error == nil || c.Status.Error.Message == nil || !strings.Contains(*c.Status.Error.Message, driverText) {
		t.Errorf("status = %+v, want status.error with %q", c.Status, driverText)
	}
	if !metav1.HasAnnotation(c.ObjectMeta, utils.AnnVolumeSnapshotBeingCreated) {
		t.Error("being-created annotation removed after RESOURCE_EXHAUSTED, which is not final")
	}
	waitFor(t, "a Warning event with the driver's message", func() bool { return hasWarning(t, h, driverText) })
	if slices.Contains(h.writes(), "nodeAffinity") {
		t.Error("nodeAffinity written although CreateSnapshot failed")
	}
	for _, a := range h.dynamic.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("unexpected %s of %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func hasWarning(t *testing.T, h *harness, text string) bool {
	events, err := h.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.Reason == "SnapshotCreationFailed" && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}
