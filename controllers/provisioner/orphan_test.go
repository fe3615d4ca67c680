package provisioner

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/internal/csitest"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/world"
)

// lostRestoreReply makes the driver create the first restored volume it
// is asked for (CSI names "pvc-<claim UID>") and answer DEADLINE_EXCEEDED,
// as when the provisioner's --timeout ends first.
const lostRestoreReply = `
rules:
- name: lost-reply
  match:
    rpc: CreateVolume
    name: "pvc-*"
    count: 1
  action:
    code: DeadlineExceeded
    when: after
`

// restoreEnv is the real upstream provisioner, wrapped, under the lib's
// controller, against the real driver, with a snapshot usable from zone-a
// and zone-b and an Immediate claim restoring it.
type restoreEnv struct {
	conn   *grpc.ClientConn
	driver string
	kube   *fake.Clientset
	snaps  *snapfake.Clientset
	dyn    *dynamicfake.FakeDynamicClient
	source string // the source volume's ID
	// watcher keeps the restore's CreateVolume calls.
	watcher *csitest.LostReply[*csi.CreateVolumeRequest]
	// claims is the claim informer of the provisioner running last.
	claims informers.SharedInformerFactory
}

// restoredVolume is the volume the lost CreateVolume made: the one with a
// content source (ListVolumes names no volume).
func restoredVolume(ctx context.Context, cc *grpc.ClientConn) *csi.Volume {
	for _, v := range backendVolumes(ctx, cc) {
		if v.GetContentSource() != nil {
			return v
		}
	}
	return nil
}

// backendVolumes are every volume the driver holds (ListVolumes).
func backendVolumes(ctx context.Context, cc *grpc.ClientConn) []*csi.Volume {
	rsp, err := csi.NewControllerClient(cc).ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		panic("ListVolumes of the in-process driver: " + err.Error()) // the driver is ours and local
	}
	var out []*csi.Volume
	for _, e := range rsp.GetEntries() {
		out = append(out, e.GetVolume())
	}
	return out
}

// newRestoreEnv starts the driver with faults (lostRestoreReply when
// empty) and cuts a snapshot with copies in zone-a and zone-b; the
// content's nodeAffinity is the driver's answer, one term per zone.
func newRestoreEnv(t *testing.T, faults string) *restoreEnv {
	t.Helper()
	if faults == "" {
		faults = lostRestoreReply
	}
	e := &restoreEnv{watcher: &csitest.LostReply[*csi.CreateVolumeRequest]{
		Want: func(r *csi.CreateVolumeRequest) bool { return r.GetVolumeContentSource() != nil },
	}}
	e.conn = drivertest.Start(t, drivertest.Options{World: worldYAML, Faults: faults}).Conn(t, grpc.WithUnaryInterceptor(e.watcher.Intercept))
	ctx := context.Background()
	c := csi.NewControllerClient(e.conn)
	zones := func(zs ...string) *csi.TopologyRequirement {
		var segs []*csi.Topology
		for _, z := range zs {
			segs = append(segs, drivertest.Segment(regionKey, "region-1", zoneKey, z))
		}
		return drivertest.Requisite(segs...)
	}
	vol, err := c.CreateVolume(ctx, drivertest.VolumeRequest("source", 1<<30, zones("zone-a")))
	if err != nil {
		t.Fatal(err)
	}
	e.source = vol.GetVolume().GetVolumeId()
	req := drivertest.SnapshotRequest("snap", e.source, zones("zone-a", "zone-b"))
	req.Parameters = map[string]string{"zonepath.csi.dev/snapshotCopies": "2"}
	snap, err := c.CreateSnapshot(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	affinity, err := topology.FromCSI(snap.GetSnapshot().GetAccessibleTopology())
	if err != nil || len(affinity) != 2 {
		t.Fatalf("snapshot accessible topology %v (%v), want zone-a and zone-b", snap.GetSnapshot().GetAccessibleTopology(), err)
	}
	e.driver = "zonepath.csi.dev"
	e.snaps, _ = snapshotObjects(e.driver, snap.GetSnapshot().GetSnapshotId(), affinity)
	vs, err := e.snaps.SnapshotV1().VolumeSnapshots(ns).Get(ctx, "snap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{snapshotapi.VolumeSnapshotContents: "VolumeSnapshotContentList", snapshotapi.VolumeSnapshots: "VolumeSnapshotList"},
		content("snapcontent-x", affinity), unstructuredSnapshot(t, vs))
	class := storageClass(immediate, nil)
	class.Parameters = nil
	class.ReclaimPolicy = ptr(v1.PersistentVolumeReclaimDelete) // the API server's default
	pvc := restoreOptions(e.driver, nil).PVC
	e.kube = fake.NewClientset(class, pvc)
	return e
}

// setNodeAffinity replaces the content's nodeAffinity, as an admin's
// kubectl edit would.
func (e *restoreEnv) setNodeAffinity(t *testing.T, ctx context.Context, affinity []v1.TopologySelectorTerm) {
	t.Helper()
	contents := e.dyn.Resource(snapshotapi.VolumeSnapshotContents)
	c, err := contents.Get(ctx, "snapcontent-x", metav1.GetOptions{})
	if err == nil {
		c.Object["spec"].(map[string]any)["nodeAffinity"] = content("", affinity).Object["spec"].(map[string]any)["nodeAffinity"]
		_, err = contents.Update(ctx, c, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Errorf("editing the content's nodeAffinity: %v", err)
	}
}

// otherZone is the snapshot zone the lost volume is not in: narrowing the
// content to it makes a rebuilt requirement miss the volume.
func otherZone(v *csi.Volume) []v1.TopologySelectorTerm {
	zone := "zone-b"
	if v != nil && v.GetAccessibleTopology()[0].GetSegments()[zoneKey] == "zone-b" {
		zone = "zone-a"
	}
	return terms(term(regionKey, "region-1", zoneKey, zone))
}

// runProvisioner runs one provisioner process (the lib's controller with
// the wrapper over upstream) until the test ends. retry is the lib's first
// retry interval.
func (e *restoreEnv) runProvisioner(t *testing.T, retry time.Duration) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(e.kube, 0)
	e.claims = factory
	claimInformer := factory.Core().V1().PersistentVolumeClaims().Informer()
	wrapper := e.wrapper(t, claimInformer)
	ctx, cancel := context.WithCancel(context.Background())
	pc := controller.NewProvisionController(ctx, e.kube, e.driver, wrapper,
		controller.LeaderElection(false), controller.Threadiness(1), controller.FailedProvisionThreshold(0),
		controller.ClaimsInformer(claimInformer),
		controller.RateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[string](retry, 2*retry)))
	factory.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); pc.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
}

// settle waits until the restored volume has a PV, or a retry after the
// lost reply has failed.
func (e *restoreEnv) settle(t *testing.T) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := e.kube.CoreV1().PersistentVolumes().Get(ctx, "pvc-claim-uid", metav1.GetOptions{})
		return err == nil || e.watcher.RetryFailed(), nil
	})
	if err != nil {
		t.Fatalf("waiting for a PV or a retry: %v", err)
	}
}

// deleteClaim deletes the claim and, for a provisioned volume, does what
// the PV controller does then: the PV is Released, and the lib deletes it
// (DeleteVolume) under its Delete reclaim policy.
func (e *restoreEnv) deleteClaim(t *testing.T, ctx context.Context) {
	t.Helper()
	err := e.kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "restore", metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	pv, err := e.kube.CoreV1().PersistentVolumes().Get(ctx, "pvc-claim-uid", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = v1.VolumeReleased
	if _, err := e.kube.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkOnlySourceLeft waits until the driver holds the source volume
// alone; otherwise it fails naming each volume left behind with no claim
// or PV to delete it.
func (e *restoreEnv) checkOnlySourceLeft(t *testing.T) {
	t.Helper()
	var left []*csi.Volume
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		left = left[:0]
		for _, v := range backendVolumes(context.Background(), e.conn) {
			if v.GetVolumeId() != e.source {
				left = append(left, v)
			}
		}
		return len(left) == 0, nil
	})
	if err == nil {
		return
	}
	for _, v := range left {
		t.Errorf("LEAKED backend volume %s (in %s, restored from snapshot %s): its claim was deleted, and DeleteVolume never reached the driver",
			v.GetVolumeId(), world.FormatSegments(v.GetAccessibleTopology()), v.GetContentSource().GetSnapshot().GetSnapshotId())
	}
}

// checkSameRequisite: every retry must repeat the first attempt's
// requirement (CSI spec, "Timeout errors": retries of the same call).
func (e *restoreEnv) checkSameRequisite(t *testing.T) {
	t.Helper()
	reqs := e.watcher.Requests()
	first := reqs[0].GetAccessibilityRequirements().GetRequisite()
	for i, r := range reqs[1:] {
		if got := r.GetAccessibilityRequirements().GetRequisite(); world.FormatSegments(got) != world.FormatSegments(first) {
			t.Errorf("retry %d sent requisite %s, the first attempt %s: a retry must repeat the first attempt's requirement",
				i+1, world.FormatSegments(got), world.FormatSegments(first))
		}
	}
}

// TestNoOrphanAfterLostReplyAndNodeAffinityEdit (issue 25, "no orphan on
// retry"): an Immediate claim restores a snapshot usable from zone-a and
// zone-b; the driver creates the volume in one of them but the reply is
// lost (DEADLINE_EXCEEDED: the lib keeps the claim "in background" and
// retries, even once the claim is deleted). An admin then narrows the
// content's nodeAffinity to the other zone. A retry built from the edited
// nodeAffinity gets ALREADY_EXISTS (CreateVolume: "Volume already exists
// but is incompatible"), a final error: the lib stops, no PV is ever made,
// and the volume outlives its claim on the backend. The retry must repeat
// the first attempt's requirement, get the volume (CreateVolume: "is
// accessible from accessibility_requirements ... MUST reply 0 OK"), and
// make its PV, whose deletion reaches DeleteVolume.
func TestNoOrphanAfterLostReplyAndNodeAffinityEdit(t *testing.T) {
	for _, tc := range []struct {
		name string
		// restart: a first process makes the attempt and dies, a second
		// retries; otherwise one process retries the claim, deleted
		// right after the edit, from the lib's cached copy.
		restart bool
	}{
		{name: "claim deleted before the retry"},
		{name: "provisioner restarted before the retry", restart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
			e := newRestoreEnv(t, "")
			e.watcher.Edit = func(ctx context.Context, cc *grpc.ClientConn) {
				e.setNodeAffinity(t, ctx, otherZone(restoredVolume(ctx, cc)))
				if !tc.restart {
					e.deleteClaim(t, ctx)
					waitClaimGone(t, ctx, e.claims)
				}
			}
			if tc.restart {
				e.attemptOnce(t)
			}
			e.runProvisioner(t, 20*time.Millisecond)
			e.settle(t)
			if tc.restart {
				e.bindAndCheckUnpinned(t)
			}
			e.deleteClaim(t, context.Background()) // and release the PV, if there is one
			e.checkOnlySourceLeft(t)
			e.checkSameRequisite(t)
		})
	}
}

// bindAndCheckUnpinned binds the claim to its PV, as the PV controller
// does, and waits for the pin to go: a bound claim is never provisioned
// again.
func (e *restoreEnv) bindAndCheckUnpinned(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.kube.CoreV1().PersistentVolumes().Get(ctx, "pvc-claim-uid", metav1.GetOptions{}); err != nil {
		return // no PV: nothing to bind (the check of the backend fails)
	}
	pvc, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "restore", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, pinned := pvc.Annotations[snapshotapi.PinAnnotation]; !pinned {
		t.Errorf("claim annotations %v: no pin while the claim is unbound", pvc.Annotations)
	}
	pvc.Spec.VolumeName = "pvc-claim-uid"
	if _, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pvc, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "restore", metav1.GetOptions{})
		_, pinned := pvc.Annotations[snapshotapi.PinAnnotation]
		return err == nil && !pinned, err
	})
	if err != nil {
		t.Errorf("the pin of the bound claim was not removed: %v", err)
	}
}

// attemptOnce is a provisioner process that makes one attempt for the
// claim, whose reply is lost, and dies.
func (e *restoreEnv) attemptOnce(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	pvc, err := e.kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "restore", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	class, err := e.kube.StorageV1().StorageClasses().Get(ctx, "sc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	options := controller.ProvisionOptions{StorageClass: class, PVC: pvc, PVName: "pvc-" + string(pvc.UID)}
	factory := informers.NewSharedInformerFactory(e.kube, 0)
	if _, state, err := e.wrapper(t, factory.Core().V1().PersistentVolumeClaims().Informer()).Provision(ctx, options); state != controller.ProvisioningInBackground {
		t.Fatalf("first attempt: state %q, error %v; want the lost reply in background", state, err)
	}
}

// waitClaimGone waits until the lib's claim informer has seen the
// deletion, so that its retry can only use its cached copy.
func waitClaimGone(t *testing.T, ctx context.Context, f informers.SharedInformerFactory) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := f.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns).Get("restore")
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the claim informer still holds the deleted claim: %v", err)
	}
}

// wrapper is the provisioner the test runs: upstream's, wrapped as
// zonepath-provisioner wraps it (Run), reading live and watching claims.
func (e *restoreEnv) wrapper(t *testing.T, claims cache.SharedIndexInformer) controller.Provisioner {
	t.Helper()
	w := New(testUpstream(t, e.conn, e.driver, e.snaps, true, e.kube), Options{
		Resolver: snapshotapi.Resolver{Reader: snapshotapi.Live{Client: e.dyn}},
		Claims:   e.kube.CoreV1(),
	})
	if err := w.Watch(claims); err != nil {
		t.Fatal(err)
	}
	return w
}

func unstructuredSnapshot(t *testing.T, vs *snapv1.VolumeSnapshot) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vs)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("snapshot.storage.k8s.io/v1")
	u.SetKind("VolumeSnapshot")
	return u
}
