package snapshotter

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/util/retry"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/internal/csitest"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

// backendSnapshots are every snapshot the driver holds (ListSnapshots).
func backendSnapshots(ctx context.Context, cc *grpc.ClientConn) []*csi.Snapshot {
	rsp, err := csi.NewControllerClient(cc).ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil {
		panic("ListSnapshots of the in-process driver: " + err.Error()) // the driver is ours and local
	}
	var out []*csi.Snapshot
	for _, e := range rsp.GetEntries() {
		out = append(out, e.GetSnapshot())
	}
	return out
}

// TestNoOrphanAfterLostReplyAndClassEdit (issue 25, "no orphan on
// retry"): the driver cuts the snapshot in one zone of the class's
// allowedTopologies [zone-a, zone-b], but its reply is lost
// (DEADLINE_EXCEEDED; CSI spec, "Timeout errors": the CO retries with the
// same name). An admin then narrows allowedTopologies to the other zone.
// The retry must send the first attempt's requirement again, so that the
// driver answers with the snapshot it cut (CreateSnapshot: "usable from
// accessibility_requirements ... MUST reply 0 OK"), the content records
// its handle, and deleting the VolumeSnapshot reaches DeleteSnapshot. A
// retry built from the edited class gets ALREADY_EXISTS, a final error:
// the content never gets a handle, and the snapshot outlives its
// content on the backend.
func TestNoOrphanAfterLostReplyAndClassEdit(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	var dyn *dynamicfake.FakeDynamicClient
	// When the first answer is lost, narrow the class to the zone the
	// lost snapshot is not in, before the retry.
	watcher := &csitest.LostReply[*csi.CreateSnapshotRequest]{}
	watcher.Edit = func(ctx context.Context, cc *grpc.ClientConn) {
		backend := backendSnapshots(ctx, cc)
		other := "zone-b"
		if len(backend) == 1 && backend[0].GetAccessibleTopology()[0].GetSegments()[zoneKey] == "zone-b" {
			other = "zone-a"
		}
		setClassTopology(t, ctx, dyn, term(regionKey, "region-1", zoneKey, other))
	}
	conn, volID := startZonepath(t, zonepathConfig{faults: lostReply, dial: []grpc.DialOption{grpc.WithUnaryInterceptor(watcher.Intercept)}})
	h := startHarnessOn(t, csiTarget{conn: conn, driver: plugin.DefaultName, volume: volID, accessibility: true}, func(d *dynamicfake.FakeDynamicClient) {
		dyn = d
		setClassTopology(t, context.Background(), d, term(regionKey, "region-1", zoneKey, "zone-a", zoneKey, "zone-b"))
		addFinalizer(t, d)
	})

	waitFor(t, "the retry to settle (content ready, or a final error)", func() bool {
		c := h.content(t)
		return contentIsReady(c) || (len(watcher.Requests()) >= 2 && !metav1.HasAnnotation(c.ObjectMeta, utils.AnnVolumeSnapshotBeingCreated))
	})
	if contentIsReady(h.content(t)) {
		waitFor(t, "the pin removed once the snapshot handle is recorded", func() bool {
			return !metav1.HasAnnotation(h.content(t).ObjectMeta, snapshotapi.PinAnnotation)
		})
	}
	deleteSnapshot(t, dyn)
	checkDeletedOnBackend(t, h, conn)

	reqs := watcher.Requests()
	if first, last := reqs[0].GetAccessibilityRequirements(), reqs[len(reqs)-1].GetAccessibilityRequirements(); !sameRequisite(first, last) {
		t.Errorf("the retry sent requisite %v, the first attempt %v: a retry must repeat the first attempt's requirement",
			world.FormatSegments(last.GetRequisite()), world.FormatSegments(first.GetRequisite()))
	}
}

// checkDeletedOnBackend waits until the driver holds no snapshot and the
// content's protection finalizer is gone; otherwise it fails naming the
// snapshot left on the backend with nothing to delete it.
func checkDeletedOnBackend(t *testing.T, h *harness, conn *grpc.ClientConn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := backendSnapshots(context.Background(), conn)
		c := h.content(t)
		if len(left) == 0 && !slices.Contains(c.Finalizers, utils.VolumeSnapshotContentFinalizer) {
			return
		}
		if time.Now().After(deadline) {
			for _, s := range left {
				t.Errorf("LEAKED backend snapshot %s (usable from %s): its VolumeSnapshot was deleted, and DeleteSnapshot never reached the driver; content status %s",
					s.GetSnapshotId(), world.FormatSegments(s.GetAccessibleTopology()), contentStatus(c))
			}
			if len(left) == 0 {
				t.Errorf("content finalizers %v: the deleted content is stuck", c.Finalizers)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// contentStatus says what the content records of its snapshot.
func contentStatus(c *crdv1.VolumeSnapshotContent) string {
	if c.Status == nil {
		return "none"
	}
	var handle, errText string
	if c.Status.SnapshotHandle != nil {
		handle = *c.Status.SnapshotHandle
	}
	if c.Status.Error != nil && c.Status.Error.Message != nil {
		errText = *c.Status.Error.Message
	}
	return fmt.Sprintf("{snapshotHandle: %q, readyToUse: %t, error: %q}", handle, contentIsReady(c), errText)
}

func sameRequisite(a, b *csi.TopologyRequirement) bool {
	return slices.EqualFunc(a.GetRequisite(), b.GetRequisite(), func(x, y *csi.Topology) bool {
		return maps.Equal(x.GetSegments(), y.GetSegments())
	})
}

// setClassTopology sets the class's allowedTopologies, as an admin's
// kubectl edit would.
func setClassTopology(t *testing.T, ctx context.Context, dyn *dynamicfake.FakeDynamicClient, allowed ...v1.TopologySelectorTerm) {
	t.Helper()
	classes := dyn.Resource(snapshotapi.VolumeSnapshotClasses)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		class, err := classes.Get(ctx, "class", metav1.GetOptions{})
		if err != nil {
			return err
		}
		class.Object["allowedTopologies"] = terms(t, allowed...)
		_, err = classes.Update(ctx, class, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Errorf("editing the class: %v", err)
	}
}

// addFinalizer gives the content the protection finalizer the
// snapshot-controller puts on every content it creates.
func addFinalizer(t *testing.T, dyn *dynamicfake.FakeDynamicClient) {
	t.Helper()
	updateContent(t, dyn, func(c *unstructured.Unstructured) {
		c.SetFinalizers([]string{utils.VolumeSnapshotContentFinalizer})
	})
}

// deleteSnapshot does what the snapshot-controller does to the content of
// a deleted VolumeSnapshot with deletionPolicy Delete: it marks the
// content being deleted and deletes it, which the API server turns into a
// deletionTimestamp while the finalizer is there.
func deleteSnapshot(t *testing.T, dyn *dynamicfake.FakeDynamicClient) {
	t.Helper()
	updateContent(t, dyn, func(c *unstructured.Unstructured) {
		ann := c.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[utils.AnnVolumeSnapshotBeingDeleted] = "yes"
		c.SetAnnotations(ann)
		now := metav1.Now()
		c.SetDeletionTimestamp(&now)
	})
}

func updateContent(t *testing.T, dyn *dynamicfake.FakeDynamicClient, change func(*unstructured.Unstructured)) {
	t.Helper()
	contents := dyn.Resource(snapshotapi.VolumeSnapshotContents)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := contents.Get(context.Background(), "content", metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(c)
		_, err = contents.Update(context.Background(), c, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
