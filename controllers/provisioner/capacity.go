package provisioner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/capacity"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/capacity/topology"
	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/owner"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// managedBy is the csi.storage.k8s.io/managed-by label of the objects, as
// csi-provisioner's central controller writes it: a deployment can switch
// between the two binaries and each takes over the other's objects.
const managedBy = "external-provisioner"

// capacityTracking is upstream's capacity controller (external-provisioner
// pkg/capacity), which publishes one CSIStorageCapacity per topology
// segment of the driver and StorageClass of the driver, from the driver's
// GetCapacity for that segment, in the namespace of $NAMESPACE.
type capacityTracking struct {
	controller *capacity.Controller
	topology   topology.Informer
	// objects watches this provisioner's own CSIStorageCapacity objects:
	// the namespace and labels only, as upstream does.
	objects informers.SharedInformerFactory
}

// newCapacityTracking wires the controller as csi-provisioner's main does
// for a central (not per-node) deployment: segments from the CSINodes and
// Nodes of the driver (pkg/capacity/topology), objects in namespace owned
// by ownerRef (nil: none), written through client.
func newCapacityTracking(cfg Config, client kubernetes.Interface, namespace string, ownerRef *metav1.OwnerReference, d *driver, k *caches) *capacityTracking {
	segments := topology.NewNodeTopology(d.name, client, k.kube.Core().V1().Nodes(), k.kube.Storage().V1().CSINodes(),
		retryQueue[string](cfg, "csitopology"))
	objects := informers.NewSharedInformerFactoryWithOptions(client, ctrl.ResyncPeriodOfCsiNodeInformer,
		informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.LabelSelector = labels.Set{capacity.DriverNameLabel: d.name, capacity.ManagedByLabel: managedBy}.String()
		}))
	// The v1 API only: it is served since Kubernetes 1.24 and v1beta1 no
	// more since 1.27, older than any cluster zonepath supports, so the
	// probe upstream makes for v1beta1 (creating an invalid object) is
	// left out.
	c := capacity.NewCentralCapacityController(csi.NewControllerClient(d.conn), d.name,
		capacity.NewV1ClientFactory(client), retryQueue[capacity.QueueKey](cfg, "csistoragecapacity"), ownerRef, managedBy, namespace, segments,
		k.kube.Storage().V1().StorageClasses(), objects.Storage().V1().CSIStorageCapacities(),
		cfg.CapacityPollInterval, cfg.CapacityForImmediateBinding, cfg.Timeout)
	return &capacityTracking{controller: c, topology: segments, objects: objects}
}

// retryQueue is a named work queue that retries with the provisioner's
// --retry-interval-start and --retry-interval-max, as upstream's are.
func retryQueue[T comparable](cfg Config, name string) workqueue.TypedRateLimitingInterface[T] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](cfg.RetryIntervalStart, cfg.RetryIntervalMax),
		workqueue.TypedRateLimitingQueueConfig[T]{Name: name})
}

// capacityOf is capacity tracking with --enable-capacity, else nil. It
// has its own API client with --kube-api-capacity-qps/burst, publishes in
// $NAMESPACE, and returns errors where upstream exits.
func capacityOf(ctx context.Context, cfg Config, restConfig *rest.Config, d *driver, k *caches) (*capacityTracking, error) {
	if !cfg.EnableCapacity {
		return nil, nil
	}
	namespace := os.Getenv("NAMESPACE")
	if namespace == "" {
		return nil, errors.New("--enable-capacity needs the NAMESPACE environment variable: the namespace of the CSIStorageCapacity objects")
	}
	config := rest.CopyConfig(restConfig)
	config.QPS, config.Burst = cfg.KubeAPICapacityQPS, cfg.KubeAPICapacityBurst
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("capacity client: %w", err)
	}
	ownerRef, err := capacityOwner(config, namespace, cfg.CapacityOwnerrefLevel)
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Publishing CSIStorageCapacity objects", "namespace", namespace, "owner", ownerRef)
	return newCapacityTracking(cfg, client, namespace, ownerRef, d, k), nil
}

// capacityOwner is the controller reference of the objects: -1 none (they
// stay when the provisioner goes, and a new one adopts them by their
// labels), 0 the pod $POD_NAME itself, 1 its ReplicaSet or StatefulSet,
// 2 a ReplicaSet's Deployment (upstream's pkg/owner follows the
// references).
func capacityOwner(config *rest.Config, namespace string, level int) (*metav1.OwnerReference, error) {
	if level < 0 {
		return nil, nil
	}
	pod := os.Getenv("POD_NAME")
	if pod == "" {
		return nil, fmt.Errorf("--capacity-ownerref-level=%d needs the POD_NAME environment variable (-1: no owner)", level)
	}
	ref, err := owner.Lookup(config, namespace, pod, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, level)
	if err != nil {
		return nil, fmt.Errorf("the owner of CSIStorageCapacity objects, %d levels above pod %s/%s: %w", level, namespace, pod, err)
	}
	return ref, nil
}

// wrap makes a successful or failed Provision, and a Delete, refresh the
// objects of the volume's segments or class at once, instead of at the
// next poll (upstream's capacity.NewProvisionWrapper). Without tracking,
// p is returned as is.
func (t *capacityTracking) wrap(p controller.Provisioner) controller.Provisioner {
	if t == nil {
		return p
	}
	return capacity.NewProvisionWrapper(p, t.controller)
}

// start runs the controller until ctx ends; k's informers must be started
// next, as upstream starts them (the controller waits for their caches).
// Its metrics (csistoragecapacities_desired_goal and the like) go to the
// legacy registry, which --metrics-address serves.
func (t *capacityTracking) start(ctx context.Context, threads uint) {
	if t == nil {
		return
	}
	legacyregistry.CustomMustRegister(t.controller)
	t.objects.Start(ctx.Done())
	go t.topology.RunWorker(ctx)
	// A WaitGroup nobody waits on: upstream's Run adds its workers to it
	// when its ReleaseLeaderElectionOnExit gate is set, and needs one.
	go t.controller.Run(ctx, int(threads), &sync.WaitGroup{})
}
