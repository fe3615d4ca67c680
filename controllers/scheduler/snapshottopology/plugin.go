package snapshottopology

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	kubefeatures "k8s.io/kubernetes/pkg/features"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// Name is the plugin's name in the registry and in KubeSchedulerConfiguration.
const Name = "SnapshotTopology"

// cacheSyncTimeout bounds how long New waits for the snapshot informers.
// They never sync when the snapshot CRDs are missing or RBAC forbids
// listing them; failing New with a message that says so beats a scheduler
// that hangs at start without a word.
const cacheSyncTimeout = time.Minute

// Plugin filters out nodes from which the VolumeSnapshots that a pod's
// unbound PVCs restore from are not accessible.
type Plugin struct {
	enabled  bool
	handle   fwk.Handle
	logger   klog.Logger
	pvcs     corelisters.PersistentVolumeClaimLister
	pods     corelisters.PodLister
	resolver snapshotapi.Resolver
}

var (
	_ fwk.PreFilterPlugin   = &Plugin{}
	_ fwk.FilterPlugin      = &Plugin{}
	_ fwk.EnqueueExtensions = &Plugin{}
	_ fwk.SignPlugin        = &Plugin{}
)

// New builds the plugin. It takes no arguments. With the
// VolumeSnapshotTopology gate off it builds a no-op that starts no
// informers, so a scheduler without the snapshot CRDs still runs.
func New(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	if !features.Enabled() {
		return &Plugin{}, nil
	}
	if h.KubeConfig() == nil {
		return nil, fmt.Errorf("%s: the framework handle has no kubeconfig for the snapshot informers", Name)
	}
	client, err := dynamic.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: dynamic client: %w", Name, err)
	}
	return newPlugin(ctx, h, client, utilfeature.DefaultFeatureGate.Enabled(kubefeatures.CrossNamespaceVolumeDataSource))
}

// newPlugin builds an enabled plugin on a given dynamic client, so tests
// can pass a fake one. The framework handle exposes no dynamic informer
// factory, so the plugin runs its own for the two snapshot resources and
// waits for it here, as out-of-tree plugins with CRDs do. crossNamespace
// is Kubernetes' CrossNamespaceVolumeDataSource gate: with it, the plugin
// also watches ReferenceGrants, which a dataSourceRef into another
// namespace needs.
func newPlugin(ctx context.Context, h fwk.Handle, client dynamic.Interface, crossNamespace bool) (*Plugin, error) {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	snapshots := factory.ForResource(snapshotapi.VolumeSnapshots)
	contents := factory.ForResource(snapshotapi.VolumeSnapshotContents)
	readers := snapshotapi.Listers{Snapshots: snapshots.Lister(), Contents: contents.Lister()}
	if crossNamespace {
		readers.Grants = factory.ForResource(snapshotapi.ReferenceGrants).Lister()
	}
	pl := &Plugin{
		enabled:  true,
		handle:   h,
		logger:   klog.FromContext(ctx).WithValues("plugin", Name),
		pvcs:     h.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Lister(),
		pods:     h.SharedInformerFactory().Core().V1().Pods().Lister(),
		resolver: snapshotapi.Resolver{Reader: readers, CrossNamespace: crossNamespace},
	}
	if err := pl.addActivationHandlers(snapshots.Informer(), contents.Informer()); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	factory.Start(ctx.Done())
	if err := waitForSync(ctx, factory); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Snapshot informers synced", "plugin", Name)
	return pl, nil
}

// waitForSync waits for the factory's informers or fails naming those
// that did not sync.
func waitForSync(ctx context.Context, factory dynamicinformer.DynamicSharedInformerFactory) error {
	ctx, cancel := context.WithTimeout(ctx, cacheSyncTimeout)
	defer cancel()
	var unsynced []error
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			unsynced = append(unsynced, fmt.Errorf("informer for %s did not sync within %v: is its CRD installed and may the scheduler list and watch it?", gvr.GroupResource(), cacheSyncTimeout))
		}
	}
	return errors.Join(unsynced...)
}

// Name returns the plugin's name.
func (pl *Plugin) Name() string { return Name }

// SignPod signs a pod by its volumes, like the in-tree volume plugins:
// pods whose volumes are equal restore from the same snapshots, so they
// get the same verdict on every node. Not signing would turn batching off
// for every pod in the profile.
func (pl *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: fwk.VolumesSignerName, Value: fwk.VolumesSigner(pod)}}, nil
}
