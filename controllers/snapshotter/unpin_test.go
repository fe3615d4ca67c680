package snapshotter

import (
	"context"
	"testing"
	"time"

	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	listers "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// TestUnpin: the pin is removed from a content that is ready and no
// longer being created, and kept otherwise; a removal judged from a copy
// older than the server's conflicts and removes nothing.
func TestUnpin(t *testing.T) {
	ready, notReady := true, false
	for _, tc := range []struct {
		name          string
		cached        string // the cache's resourceVersion; the server has "5"
		ready         *bool
		beingCreated  bool
		wantPinRemain bool
	}{
		{name: "ready, created: removed", cached: "5", ready: &ready},
		{name: "being created: kept", cached: "5", ready: &ready, beingCreated: true, wantPinRemain: true},
		{name: "cut but not ready (upstream polls with CreateSnapshot): kept", cached: "5", ready: &notReady, wantPinRemain: true},
		{name: "no status after a final error: kept", cached: "5", wantPinRemain: true},
		{name: "stale cache: the guarded patch conflicts, kept", cached: "4", ready: &ready, wantPinRemain: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann := map[string]string{snapshotapi.PinAnnotation: "[]"}
			if tc.beingCreated {
				ann[utils.AnnVolumeSnapshotBeingCreated] = "yes"
			}
			server := contentObj("content", nil)
			server.SetAnnotations(ann)
			server.SetResourceVersion("5")
			dyn := dynamicClient(server)
			dyn.PrependReactor("*", "*", clienttesting.ObjectReaction(&rvTracker{ObjectTracker: dyn.Tracker()}))

			cached := &crdv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "content", ResourceVersion: tc.cached, Annotations: ann}}
			if tc.ready != nil {
				cached.Status = &crdv1.VolumeSnapshotContentStatus{ReadyToUse: tc.ready}
			}
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := indexer.Add(cached); err != nil {
				t.Fatal(err)
			}
			u := &unpinner{client: dyn, lister: listers.NewVolumeSnapshotContentLister(indexer), timeout: time.Second}
			if err := u.unpin(context.Background(), "content"); err != nil {
				t.Fatalf("unpin: %v", err)
			}
			got, err := dyn.Resource(snapshotapi.VolumeSnapshotContents).Get(context.Background(), "content", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, pinned := got.GetAnnotations()[snapshotapi.PinAnnotation]; pinned != tc.wantPinRemain {
				t.Errorf("pin present = %v, want %v (annotations %v)", pinned, tc.wantPinRemain, got.GetAnnotations())
			}
			if tc.beingCreated && !metav1.HasAnnotation(metav1.ObjectMeta{Annotations: got.GetAnnotations()}, utils.AnnVolumeSnapshotBeingCreated) {
				t.Error("the being-created annotation was touched")
			}
		})
	}
}
