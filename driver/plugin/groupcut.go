package plugin

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/datapath"
	"github.com/zonepath/zonepath/driver/state"
)

// Write-order consistency of group snapshots. CreateVolumeGroupSnapshot
// (spec.md): "This group snapshot MUST give a write-order consistency
// guarantee or fail if that's not possible. That is to say, all the of
// the volume snapshots in the group MUST be taken at the same
// point-in-time relative to a stream of write traffic to the specified
// volumes." zonepath's volumes are plain files and directories: it cannot
// freeze them, so it copies members one after another and then proves
// that no member changed since before the first copy began. A validated
// cut:
//
//  1. note the time T (datapath.Now, the clock ctime is stamped from);
//  2. write back the data directory's filesystem (datapath.Flush), so that a
//     store through a shared mapping after T faults and stamps ctime;
//  3. copy every member;
//  4. walk every member: an entry with a ctime at or after T, or one that
//     vanished, is a change after T (datapath.ChangedSince).
//
// If no member changed, every copy holds the members as they were at T:
// one point in the tenants' write order. A write a copy missed came after
// that copy began, so after T and after the flush, and it stamped a ctime
// at or after T: the cut is dropped. (A write in progress at T may be
// copied in part, as a crash would leave it; a write that follows it in
// the tenant's order starts after T and is seen.) A dropped cut is tried
// again, cutAttempts times in all, and then refused with ABORTED: an
// optimistic check lost to concurrent writes (gRPC's ABORTED), which the
// caller retries with exponential back off, as the csi-snapshotter does.
// A workload that pauses writing for as long as a cut takes is cut while
// it runs; one that never pauses is refused, never cut inconsistently.
//
// On tmpfs and ramfs nothing is written back, so a store through a shared
// mapping never stamps ctime, and step 4 cannot see it. There zonepath
// falls back to cuts no one can write: a group with a member published
// read-write is refused with FAILED_PRECONDITION, the spec's "Cannot
// snapshot multiple volumes together", and while members are being cut a
// read-write ControllerPublishVolume of one is ABORTED ("Operation pending
// for volume"). Tenants write only through a node publish, which the CO
// makes only after ControllerPublishVolume succeeds (spec.md,
// NodeStageVolume and NodePublishVolume; zonepath always has
// PUBLISH_UNPUBLISH_VOLUME and its CSIDriver sets attachRequired: true).

// cutAttempts is how many validated cuts a group snapshot tries, and
// cutBackoff the pause before the second (doubled before each next one).
const (
	cutAttempts = 3
	cutBackoff  = 50 * time.Millisecond
)

// cutGuard holds what the fallback for tmpfs needs: the volumes a group
// snapshot is cutting. Publishes hold the read lock from the check to the
// end of their store update, the group the write lock from its check of
// the publication records to the marking of its members: either the group
// sees the publication, or the publish sees the mark.
type cutGuard struct {
	// quietOnly is set on a data directory whose filesystem hides stores
	// through shared mappings (datapath.HidesMappedStores).
	quietOnly bool
	mu        sync.RWMutex
	cutting   map[string]int // volume ID → groups cutting it
}

// memberChange is what a validated cut saw change: an entry of a member.
type memberChange struct {
	volume, entry string
}

// cutMembers copies each source volume's data under a new snapshot ID and
// returns the IDs: one point of the tenants' write order in every member.
func (p *Plugin) cutMembers(ctx context.Context, sources []*state.Volume) ([]string, error) {
	if p.cuts.quietOnly {
		return p.cutQuiet(ctx, sources)
	}
	logger := klog.FromContext(ctx)
	wait := cutBackoff
	for attempt := 1; ; attempt++ {
		ids, changed, err := p.cutOnce(ctx, sources)
		if err != nil || changed == nil {
			return ids, err
		}
		p.dropCut(ctx, ids, nil)
		if attempt == cutAttempts {
			return nil, status.Errorf(codes.Aborted,
				"cannot snapshot the volumes together: %s of volume %s changed while the group was cut, on each of %d tries; "+
					"zonepath cuts a group only while no member is written for as long as the cut takes; retry, or pause the writers",
				entryName(changed.entry), changed.volume, cutAttempts)
		}
		logger.V(2).Info("A member changed during a group cut; cutting again", "volumeID", changed.volume, "entry", changed.entry, "attempt", attempt)
		select {
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// entryName names an entry of a volume in a message.
func entryName(entry string) string {
	if entry == "." {
		return "the volume's root"
	}
	return fmt.Sprintf("entry %q", entry)
}

// cutOnce makes one validated cut: its snapshot IDs, and the first change
// it saw (nil: the cut holds one point in time). The IDs' data is the
// caller's to drop when a change was seen.
func (p *Plugin) cutOnce(ctx context.Context, sources []*state.Volume) ([]string, *memberChange, error) {
	since, err := datapath.Now()
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "reading the clock: %v", err)
	}
	// Every volume is a file or directory of the data directory's one
	// filesystem: one syncfs writes back all of them.
	if err := datapath.Flush(p.data.root); err != nil {
		return nil, nil, status.Errorf(codes.Internal, "writing back the data directory before the cut: %v", err)
	}
	if afterCutFlush != nil {
		afterCutFlush()
	}
	ids, err := p.copyMembers(ctx, sources)
	if err != nil {
		return nil, nil, err
	}
	for _, src := range sources {
		entry, err := datapath.ChangedSince(p.data.volumePath(src.ID, src.Block), since)
		if err != nil {
			return nil, nil, p.dropCut(ctx, ids, dataStatus(err, "checking volume %s after the cut", src.ID))
		}
		if entry != "" {
			return ids, &memberChange{volume: src.ID, entry: entry}, nil
		}
	}
	return ids, nil, nil
}

// afterCutFlush, when a test sets it, runs after a validated cut noted its
// time and flushed, before the first copy: a tenant's write there must be
// seen.
var afterCutFlush func()

// copyMembers copies each source's data under a new snapshot ID, one
// after another; on an error, the copies made are removed.
func (p *Plugin) copyMembers(ctx context.Context, sources []*state.Volume) ([]string, error) {
	ids := make([]string, 0, len(sources))
	for _, src := range sources {
		id := newID(snapshotPrefix)
		if err := p.data.snapshot(id, src.ID, src.Block); err != nil {
			err = dataStatus(err, "cutting snapshot %s of volume %s", id, src.ID)
			return nil, p.dropCut(ctx, append(ids, id), err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// cutQuiet is the fallback for tmpfs: the members are copied while no one
// can write them (holdForCut).
func (p *Plugin) cutQuiet(ctx context.Context, sources []*state.Volume) ([]string, error) {
	release, err := p.holdForCut(sources)
	if err != nil {
		return nil, err
	}
	defer release()
	return p.copyMembers(ctx, sources)
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
		"cannot snapshot the volumes together: volume %s is published read-write to node %s, and on this data directory's filesystem (tmpfs) "+
			"zonepath can give a group snapshot write-order consistency only while no member can be written; stop the workload (or publish the volume read-only) and retry",
		volID, writer))
}

// admitPublish lets a ControllerPublish of volID go ahead unless it is
// read-write and a group snapshot is cutting the volume in the fallback
// for tmpfs (ABORTED). The caller must call release once its publication
// is recorded or refused.
func (p *Plugin) admitPublish(volID string, readonly bool) (release func(), err error) {
	g := &p.cuts
	g.mu.RLock()
	if !readonly && g.cutting[volID] > 0 {
		g.mu.RUnlock()
		return nil, status.Errorf(codes.Aborted, "volume %s is being cut into a group snapshot; retry the read-write publish when the cut is done", volID)
	}
	return g.mu.RUnlock, nil
}
