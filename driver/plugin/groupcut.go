package plugin

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// Write-order consistency of group snapshots. CreateVolumeGroupSnapshot
// (spec.md): "This group snapshot MUST give a write-order consistency
// guarantee or fail if that's not possible. That is to say, all the of
// the volume snapshots in the group MUST be taken at the same
// point-in-time relative to a stream of write traffic to the specified
// volumes." zonepath's volumes are plain files and directories: it cannot
// freeze them or copy them from one instant, so it cuts members one after
// another, and that is consistent only while nobody writes.
//
// Who can write. A volume's data is written by tenants only through a
// node publish, and zonepath always has PUBLISH_UNPUBLISH_VOLUME, so "the
// CO MUST guarantee that [NodeStageVolume and NodePublishVolume are]
// called after ControllerPublishVolume is called for the given volume on
// the given node and returns a success" (spec.md, NodeStageVolume and
// NodePublishVolume), and ControllerUnpublishVolume comes only after every
// NodeUnpublishVolume and NodeUnstageVolume of it there. A volume without
// a read-write ControllerPublish record therefore has no writer. (A
// Kubernetes CSIDriver with attachRequired: false would break that
// promise; deploy/base sets true.)
//
// So: a group whose members are all unpublished, or published read-only
// only, is cut one member after another and answers OK; a group with a
// member published read-write is refused with FAILED_PRECONDITION, the
// spec's "Cannot snapshot multiple volumes together" (the caller "MUST
// fix the configuration of the volumes ... before retrying": stop the
// workload), naming the volume and node. The csi-snapshotter retries with
// backoff, so the group is cut once the workload has stopped.
//
// cutGuard closes the race between that check and a ControllerPublish:
// while members are being cut, a read-write publish of one of them is
// ABORTED, the spec's "Operation pending for volume" (the caller retries
// with exponential back off). Read-only publishes write nothing and pass.

// cutGuard holds the volumes whose data a group snapshot is cutting.
// Publishes hold the read lock from the check to the end of their store
// update, the group the write lock from its check of the publication
// records to the marking of its members: either the group sees the
// publication, or the publish sees the mark.
type cutGuard struct {
	mu      sync.RWMutex
	cutting map[string]int // volume ID → groups cutting it
}

// holdForCut checks that no source is published read-write, then marks the
// sources as being cut until the returned release is called.
func (p *Plugin) holdForCut(sources []*state.Volume) (release func(), err error) {
	g := &p.cuts
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, v := range sources {
		if err := p.checkNoWriter(v.ID); err != nil {
			return nil, err
		}
	}
	if g.cutting == nil {
		g.cutting = map[string]int{}
	}
	for _, v := range sources {
		g.cutting[v.ID]++
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, v := range sources {
			if g.cutting[v.ID]--; g.cutting[v.ID] == 0 {
				delete(g.cutting, v.ID)
			}
		}
	}, nil
}

// checkNoWriter is FAILED_PRECONDITION when the volume is published
// read-write to a node: a tenant there may write while the group is cut.
// With the guard's write lock held no publish is between its check and
// its durable record, so the durable publications are all there are.
func (p *Plugin) checkNoWriter(volID string) error {
	var writer string
	nodes := p.store.PublishedNodes(volID)
	p.store.View(func(r state.Reader) {
		for _, node := range nodes {
			if pub := r.Publication(volID, node); pub != nil && !pub.Readonly {
				writer = node
				return
			}
		}
	})
	if writer == "" {
		return nil
	}
	return status.Error(codes.FailedPrecondition, fmt.Sprintf(
		"cannot snapshot the volumes together: volume %s is published read-write to node %s, and zonepath can give a group snapshot "+
			"write-order consistency only while no member can be written; stop the workload (or publish the volume read-only) and retry",
		volID, writer))
}

// admitPublish lets a ControllerPublish of volID go ahead unless it is
// read-write and a group snapshot is cutting the volume (ABORTED). The
// caller must call release once its publication is recorded or refused.
func (p *Plugin) admitPublish(volID string, readonly bool) (release func(), err error) {
	g := &p.cuts
	g.mu.RLock()
	if !readonly && g.cutting[volID] > 0 {
		g.mu.RUnlock()
		return nil, status.Errorf(codes.Aborted, "volume %s is being cut into a group snapshot; retry the read-write publish when the cut is done", volID)
	}
	return g.mu.RUnlock, nil
}
