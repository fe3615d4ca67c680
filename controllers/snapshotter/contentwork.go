package snapshotter

import (
	"context"

	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/worker"
)

// contentWork is the plumbing of zonepath's own work on upstream's
// content informer (unpin.go, members.go): the names of the contents
// wants picks, in a rate-limited queue, worked one at a time by work
// until ctx ends; a failed name is retried with backoff. The work reads
// the content from the cache again, so a queued name whose content
// changed meanwhile is judged on what it is now.
type contentWork struct {
	what   string // for the log: what work does
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	wants  func(*crdv1.VolumeSnapshotContent) bool
	work   func(ctx context.Context, name string) error
}

// newContentWork registers on informer; deleted, when set, is told the
// name of each deleted content.
func newContentWork(what string, informer cache.SharedIndexInformer, o Options, wants func(*crdv1.VolumeSnapshotContent) bool,
	work func(context.Context, string) error, deleted func(name string)) (*contentWork, error) {
	w := &contentWork{
		what: what, synced: informer.HasSynced, wants: wants, work: work,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](o.RetryIntervalStart, o.RetryIntervalMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: what}),
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: w.enqueue, UpdateFunc: func(_, obj any) { w.enqueue(obj) }}
	if deleted != nil {
		handler.DeleteFunc = func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				deleted(key)
			}
		}
	}
	_, err := informer.AddEventHandler(handler)
	return w, err
}

func (w *contentWork) enqueue(obj any) {
	if content, ok := obj.(*crdv1.VolumeSnapshotContent); ok && w.wants(content) {
		w.queue.Add(content.Name)
	}
}

// run works the queue until ctx ends.
func (w *contentWork) run(ctx context.Context) {
	defer w.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), w.synced) {
		return
	}
	go worker.Run(ctx, w.queue, w.work, func(ctx context.Context, name string, err error) {
		klog.FromContext(ctx).V(2).Info("Content work failed; retrying", "work", w.what, "content", name, "err", err)
	})
	<-ctx.Done()
}
