package provisioner

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/zonepath/zonepath/internal/bootstrap"
)

// caches are the informers upstream's provisioner reads from. Narrowing
// reads snapshots live (snapshotapi.Live), so there are no snapshot
// informers; the pins watch the claim informer the lib already runs.
type caches struct {
	kube     informers.SharedInformerFactory
	classes  storagelisters.StorageClassLister
	claims   corelisters.PersistentVolumeClaimLister
	csiNodes storagelisters.CSINodeLister
	nodes    corelisters.NodeLister
	vas      storagelisters.VolumeAttachmentLister
}

// newCaches builds the listers the way csi-provisioner does: CSINodes and
// Nodes only for a driver with topology, VolumeAttachments only for one
// that attaches. This binary watches exactly what upstream's does.
func newCaches(kube kubernetes.Interface, d *driver) *caches {
	f := informers.NewSharedInformerFactory(kube, ctrl.ResyncPeriodOfCsiNodeInformer)
	c := &caches{kube: f, classes: f.Storage().V1().StorageClasses().Lister(), claims: f.Core().V1().PersistentVolumeClaims().Lister()}
	if d.ctrlCaps[csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME] {
		c.vas = f.Storage().V1().VolumeAttachments().Lister()
	}
	if ctrl.SupportsTopology(d.pluginCaps) {
		c.csiNodes = f.Storage().V1().CSINodes().Lister()
		c.nodes = f.Core().V1().Nodes().Lister()
	}
	return c
}

// start starts every informer requested so far and waits, bounded, for
// their caches: provisioning from a half-filled cache would miss CSINodes
// and fail claims that are fine.
func (c *caches) start(ctx context.Context) error {
	return bootstrap.StartInformers(ctx, c.kube)
}

// claimInformer is shared by the lib's controller and upstream's cloning
// protection controller, as in csi-provisioner.
func (c *caches) claimInformer() cache.SharedIndexInformer {
	return c.kube.Core().V1().PersistentVolumeClaims().Informer()
}
