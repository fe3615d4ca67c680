package provisioner

import (
	"context"

	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/features"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/internal/bootstrap"
)

// helpers are upstream's two side controllers that csi-provisioner runs
// next to the provisioner. Without the first, a clone's source PVC keeps
// upstream's clone finalizer forever; without the second, a snapshot
// whose restore was abandoned keeps its source-protection finalizer.
type helpers struct {
	clones *ctrl.CloningProtectionController
	sweep  *ctrl.SnapshotFinalizerController
}

// newHelpers builds what the driver and cluster support: the cloning
// controller only for CLONE_VOLUME drivers (upstream returns nil
// otherwise), the sweep only when enabled and the snapshot v1 API exists.
func newHelpers(ctx context.Context, cfg Config, c *bootstrap.Clients, d *driver, k *caches) helpers {
	h := helpers{clones: ctrl.NewCloningProtectionController(c.Kube, k.claims, k.claimInformer(), retryQueue[string](cfg, "claims"), d.ctrlCaps)}
	if cfg.SnapshotOrphanSweepInterval <= 0 {
		return h
	}
	ok, err := features.IsVolumeSnapshotV1Available(c.Kube.Discovery())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Not sweeping orphaned snapshot finalizers: discovery failed")
		return h
	}
	if ok {
		h.sweep = ctrl.NewSnapshotFinalizerController(c.Snapshots, k.claims, d.ctrlCaps, cfg.SnapshotOrphanSweepInterval)
	}
	return h
}

func (h helpers) start(ctx context.Context, cfg Config) {
	if h.clones != nil {
		go h.clones.Run(ctx, int(cfg.CloningProtectionThreads), nil)
	}
	if h.sweep != nil {
		go h.sweep.Run(ctx, nil)
	}
}
