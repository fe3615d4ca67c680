package snapshotter

import (
	"context"
	"time"

	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	listers "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// unpinner removes the pin (snapshotapi.PinAnnotation) from a content
// whose snapshot is ready: upstream calls CreateSnapshot for a content
// until it is ready to use (a cut snapshot not yet ready is polled with
// CreateSnapshot too), and never after. Upstream removes its
// being-created annotation after the ready status, so a content that is
// ready and no longer being created is done. A pin whose attempt ended in a
// final error stays on the content, and the next attempt decides (pin.go):
// removing it would requeue the content at once, without backoff.
//
// The removal is guarded by the resourceVersion of the content it judged,
// so a content that changed in between is judged again from the cache.
type unpinner struct {
	*contentWork
	client  dynamic.Interface
	lister  listers.VolumeSnapshotContentLister
	timeout time.Duration
}

// newUnpinner watches informer; forget drops what the Snapshotter
// remembers of a deleted content.
func newUnpinner(client dynamic.Interface, informer cache.SharedIndexInformer, lister listers.VolumeSnapshotContentLister, o Options, forget func(content string)) (*unpinner, error) {
	u := &unpinner{client: client, lister: lister, timeout: o.Timeout}
	var err error
	u.contentWork, err = newContentWork("unpin", informer, o, done, u.unpin, forget)
	return u, err
}

// done says whether content carries a pin no attempt needs any more.
func done(content *crdv1.VolumeSnapshotContent) bool {
	return metav1.HasAnnotation(content.ObjectMeta, snapshotapi.PinAnnotation) && contentIsReady(content) &&
		!metav1.HasAnnotation(content.ObjectMeta, utils.AnnVolumeSnapshotBeingCreated)
}

func contentIsReady(c *crdv1.VolumeSnapshotContent) bool {
	return c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
}

// unpin removes the pin of the cached content name if it is done. A
// conflict means the content changed since the cache's copy; the informer
// delivers the change, which queues the content again if still done.
func (u *unpinner) unpin(ctx context.Context, name string) error {
	content, err := u.lister.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !done(content)) {
		return nil
	}
	if err != nil {
		return err
	}
	patch, err := snapshotapi.PinPatch(nil, content.ResourceVersion)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	_, err = u.client.Resource(snapshotapi.VolumeSnapshotContents).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Removed the pinned topology: no CreateSnapshot is in an unknown state", "content", name)
	}
	return err
}
