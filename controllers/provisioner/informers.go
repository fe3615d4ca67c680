package provisioner

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// caches are the informers upstream's provisioner and ours read from.
type caches struct {
	kube      informers.SharedInformerFactory
	classes   storagelisters.StorageClassLister
	claims    corelisters.PersistentVolumeClaimLister
	csiNodes  storagelisters.CSINodeLister
	nodes     corelisters.NodeLister
	vas       storagelisters.VolumeAttachmentLister
	snapshots snapinformers.SharedInformerFactory
	contents  dynamicinformer.DynamicSharedInformerFactory
	lookup    Lookup
}

// newCaches builds the listers the way csi-provisioner does: CSINodes and
// Nodes only for a driver with topology, VolumeAttachments only for one
// that attaches. Snapshot informers exist only with the gate on, so that
// with it off this binary watches exactly what upstream's does.
func newCaches(kube kubernetes.Interface, d *driver, snapshotTopology bool, snaps snapclientset.Interface, dyn dynamic.Interface) *caches {
	f := informers.NewSharedInformerFactory(kube, ctrl.ResyncPeriodOfCsiNodeInformer)
	c := &caches{kube: f, classes: f.Storage().V1().StorageClasses().Lister(), claims: f.Core().V1().PersistentVolumeClaims().Lister()}
	if d.ctrlCaps[csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME] {
		c.vas = f.Storage().V1().VolumeAttachments().Lister()
	}
	if ctrl.SupportsTopology(d.pluginCaps) {
		c.csiNodes = f.Storage().V1().CSINodes().Lister()
		c.nodes = f.Core().V1().Nodes().Lister()
	}
	if snapshotTopology {
		c.snapshots = snapinformers.NewSharedInformerFactory(snaps, ctrl.ResyncPeriodOfCsiNodeInformer)
		c.contents = dynamicinformer.NewDynamicSharedInformerFactory(dyn, ctrl.ResyncPeriodOfCsiNodeInformer)
		c.lookup = Listers{
			Snapshots: c.snapshots.Snapshot().V1().VolumeSnapshots().Lister(),
			Contents:  c.contents.ForResource(snapshotapi.VolumeSnapshotContents).Lister(),
		}
	}
	return c
}

// start starts every informer requested so far and waits for their
// caches: provisioning from a half-filled cache would miss CSINodes and
// snapshots and fail claims that are fine.
func (c *caches) start(ctx context.Context) error {
	c.kube.Start(ctx.Done())
	if err := synced(c.kube.WaitForCacheSync(ctx.Done())); err != nil {
		return err
	}
	if c.snapshots == nil {
		return nil
	}
	c.snapshots.Start(ctx.Done())
	c.contents.Start(ctx.Done())
	if err := synced(c.snapshots.WaitForCacheSync(ctx.Done())); err != nil {
		return err
	}
	return synced(c.contents.WaitForCacheSync(ctx.Done()))
}

func synced[K comparable](result map[K]bool) error {
	for k, ok := range result {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", k)
		}
	}
	return nil
}

// claimInformer is shared by the lib's controller and upstream's cloning
// protection controller, as in csi-provisioner.
func (c *caches) claimInformer() cache.SharedIndexInformer {
	return c.kube.Core().V1().PersistentVolumeClaims().Informer()
}
