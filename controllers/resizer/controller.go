package resizer

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"

	"github.com/zonepath/zonepath/controllers/worker"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// Controller expands the volumes of claims bound to a CSI volume of its
// driver (see ours).
//
// ControllerModifyVolume (VolumeAttributesClass) is a second loop on the
// same claim informer with its own queue and a Modifier beside Expander
// (modify.go), added by EnableModify.
type Controller struct {
	o        Options
	kube     kubernetes.Interface
	expander Expander
	factory  informers.SharedInformerFactory
	claims   claimGetter
	volumes  *volumeGetter
	queue    workqueue.TypedRateLimitingInterface[string]
	events   record.EventBroadcaster
	recorder record.EventRecorder
	finals   keySet
	modify   *modifyLoop // nil: no modify loop
}

// NewController builds the controller on kube's claim and volume
// informers; Run starts them.
func NewController(kube kubernetes.Interface, expander Expander, o Options) (*Controller, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(kube, o.ResyncPeriod)
	claims, volumes := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes()
	c := &Controller{
		o: o, kube: kube, expander: expander, factory: factory,
		claims:  claimGetter{claims.Lister()},
		volumes: &volumeGetter{lister: volumes.Lister(), written: map[string]resource.Quantity{}},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](o.RetryIntervalStart, o.RetryIntervalMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resizer"}),
		events: record.NewBroadcaster(),
		finals: keySet{m: map[string]bool{}},
	}
	c.events.StartRecordingToSink(&corev1.EventSinkImpl{Interface: kube.CoreV1().Events(metav1.NamespaceAll)})
	c.recorder = c.events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "zonepath-resizer"})
	volumes.Informer() // the factory starts only informers asked for
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(obj) },
		UpdateFunc: onClaimUpdate(expansionChanged, c.enqueue),
		DeleteFunc: c.claimDeleted,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// ours says whether a volume's expansion is this controller's: a CSI
// volume of its driver. kube-controller-manager's expand controller has
// no expandable plugin for CSI volumes (its csi plugin lacks
// ExpandVolumeDevice): for them it only records ExternalExpanding
// ("waiting for an external controller to expand this PVC") and sets no
// volume.kubernetes.io/storage-resizer annotation; it names a CSI driver
// there only for migrated in-tree volumes, which this resizer does not
// support. So the volume's driver decides, as in upstream csi-resizer's
// CanSupport.
func (c *Controller) ours(pv *v1.PersistentVolume) bool {
	return pv.Spec.CSI != nil && pv.Spec.CSI.Driver == c.o.DriverName
}

// enqueue queues every claim: whether it is ours is known only from its
// volume, which sync reads from the cache.
func (c *Controller) enqueue(obj any) {
	pvc, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	if key, err := cache.MetaNamespaceKeyFunc(pvc); err == nil {
		c.queue.Add(key)
	}
}

// expansionChanged says whether a claim update matters to the
// expansion: the request, the annotation, the capacity, a status kubelet
// wrote, or nothing at all (a resync: the same object again; the API
// server changes resourceVersion on every write, a fake clientset does
// not, hence the comparison of the whole object). The controller's own
// writes of ControllerResizeInProgress and conditions do not, so that a
// failing claim is retried by the queue's backoff only.
func expansionChanged(o, n *v1.PersistentVolumeClaim) bool {
	oldReq, newReq := o.Spec.Resources.Requests[v1.ResourceStorage], n.Spec.Resources.Requests[v1.ResourceStorage]
	oldCap, newCap := o.Status.Capacity[v1.ResourceStorage], n.Status.Capacity[v1.ResourceStorage]
	newStatus := n.Status.AllocatedResourceStatuses[v1.ResourceStorage]
	statusChanged := newStatus != o.Status.AllocatedResourceStatuses[v1.ResourceStorage] &&
		newStatus != v1.PersistentVolumeClaimControllerResizeInProgress
	return oldReq.Cmp(newReq) != 0 || oldCap.Cmp(newCap) != 0 || statusChanged || equality.Semantic.DeepEqual(o, n) ||
		o.Annotations[volumetypes.VolumeResizerKey] != n.Annotations[volumetypes.VolumeResizerKey] ||
		o.Status.Phase != n.Status.Phase
}

// onClaimUpdate is an informer UpdateFunc that passes the new claim to
// enqueue when changed says the update matters.
func onClaimUpdate(changed func(o, n *v1.PersistentVolumeClaim) bool, enqueue func(any)) func(oldObj, newObj any) {
	return func(oldObj, newObj any) {
		o, ok1 := oldObj.(*v1.PersistentVolumeClaim)
		n, ok2 := newObj.(*v1.PersistentVolumeClaim)
		if ok1 && ok2 && changed(o, n) {
			enqueue(n)
		}
	}
}

func (c *Controller) claimDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.finals.remove(key)
	}
}

// Run starts the informers, waits (bounded) for their caches, then runs
// the workers until ctx ends and they have stopped.
func (c *Controller) Run(ctx context.Context) error {
	defer c.events.Shutdown()
	defer c.queue.ShutDown()
	defer c.factory.Shutdown()
	if err := bootstrap.StartInformers(ctx, c.factory); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range c.o.Workers {
		wg.Go(func() { worker.Run(ctx, c.queue, c.sync, c.expandFailed) })
		if c.modify != nil {
			wg.Go(func() { c.modify.run(ctx) })
		}
	}
	<-ctx.Done()
	c.queue.ShutDown()
	if c.modify != nil {
		c.modify.queue.ShutDown()
	}
	wg.Wait()
	return nil
}

// expandFailed logs a failed sync before worker.Run requeues it with
// backoff.
func (c *Controller) expandFailed(ctx context.Context, key string, err error) {
	klog.FromContext(ctx).Error(err, "Resizing failed; retrying", "pvc", key, "retries", c.queue.NumRequeues(key))
}

// claimGetter reads a claim by key from the informer's cache; nil when
// it is gone.
type claimGetter struct {
	lister corelisters.PersistentVolumeClaimLister
}

func (g claimGetter) Get(key string) (*v1.PersistentVolumeClaim, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil // not a key of ours: nothing to retry
	}
	pvc, err := g.lister.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pvc, err
}

// volumeGetter reads a volume from the informer's cache, never older
// than this controller's own last write of its capacity. Without that, a
// claim re-queued by its own status update could meet its volume's cache
// entry from before the expansion and expand it a second time.
type volumeGetter struct {
	lister corelisters.PersistentVolumeLister

	mu      sync.Mutex
	written map[string]resource.Quantity // capacity written, until the cache shows it
}

func (g *volumeGetter) Get(name string) (*v1.PersistentVolume, error) {
	pv, err := g.lister.Get(name)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	want, ok := g.written[name]
	if !ok {
		return pv, nil
	}
	if pv.Spec.Capacity.Storage().Cmp(want) >= 0 {
		delete(g.written, name) // the cache has caught up; a volume never shrinks
		return pv, nil
	}
	pv = pv.DeepCopy()
	if pv.Spec.Capacity == nil {
		pv.Spec.Capacity = v1.ResourceList{}
	}
	pv.Spec.Capacity[v1.ResourceStorage] = want
	return pv, nil
}

// wrote records that the volume's capacity is now q on the API server.
func (g *volumeGetter) wrote(name string, q resource.Quantity) {
	g.mu.Lock()
	g.written[name] = q
	g.mu.Unlock()
}

// keySet is the claims whose last ControllerExpandVolume failed finally.
type keySet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *keySet) add(k string)    { s.mu.Lock(); s.m[k] = true; s.mu.Unlock() }
func (s *keySet) remove(k string) { s.mu.Lock(); delete(s.m, k); s.mu.Unlock() }
func (s *keySet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}
