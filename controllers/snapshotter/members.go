package snapshotter

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	listers "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// members gives the VolumeSnapshotContents of group snapshot members the
// nodeAffinity a single snapshot's content gets. In external-snapshotter
// v8.7.0 the sidecar calls CreateVolumeGroupSnapshot and writes only the
// VolumeGroupSnapshotContent's status; the snapshot-controller then
// creates one VolumeSnapshotContent per member (annotation
// groupsnapshot.storage.k8s.io/volumeGroupSnapshotHandle, status
// snapshotHandle), with no nodeAffinity, since it never sees
// accessible_topology. So members watches those contents (on upstream's
// content informer), asks the driver for the member's accessible_topology
// with ListSnapshots(snapshot_id), and writes it exactly as CreateSnapshot
// does (record: only when the content has no nodeAffinity, guarded by its
// resourceVersion). See controllers/README.md, "Group snapshots and
// topology". With or without KEP-5943 it also gives back readyToUse to a
// member content upstream's controllers left false although the driver
// says the snapshot is ready (markMemberReady).
type members struct {
	*contentWork
	snap   *Snapshotter
	lister listers.VolumeSnapshotContentLister
	// done holds the contents already recorded (or with nothing to
	// record), so that their later updates cost no CSI call.
	done sync.Map
}

func newMembers(snap *Snapshotter, informer cache.SharedIndexInformer, lister listers.VolumeSnapshotContentLister, o Options) (*members, error) {
	m := &members{snap: snap, lister: lister}
	var err error
	m.contentWork, err = newContentWork("group-members", informer, o, m.wants, m.sync, func(name string) { m.done.Delete(name) })
	return m, err
}

// isMember: a content of our driver that the snapshot-controller made for
// a group snapshot member and gave its snapshot handle.
func (m *members) isMember(c *crdv1.VolumeSnapshotContent) bool {
	_, member := c.Annotations[utils.VolumeGroupSnapshotHandleAnnotation]
	return member && c.Spec.Driver == m.snap.driver && c.Status != nil && c.Status.SnapshotHandle != nil && c.DeletionTimestamp == nil
}

// wants a member not recorded yet, or one whose content says it is not
// ready to use.
func (m *members) wants(c *crdv1.VolumeSnapshotContent) bool {
	_, recorded := m.done.Load(c.Name)
	return m.isMember(c) && (!recorded || !contentReady(c))
}

func contentReady(c *crdv1.VolumeSnapshotContent) bool {
	return c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
}

func (m *members) sync(ctx context.Context, name string) error {
	c, err := m.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !m.isMember(c) {
		return nil
	}
	if _, recorded := m.done.Load(name); !recorded && m.snap.topologyOn() {
		if err := m.snap.recordMember(ctx, name, *c.Status.SnapshotHandle); err != nil {
			return err
		}
	}
	m.done.Store(name, true)
	return m.snap.markMemberReady(ctx, c)
}

// markMemberReady writes readyToUse true on a member's content that says
// false once the driver says the snapshot is ready_to_use, as
// csi-snapshotter's own status update does for any content it polls.
// Upstream (external-snapshotter v8.7.0) can leave a ready member false
// for good: csi-snapshotter fills the group content's
// VolumeSnapshotInfoList once, from the first CreateVolumeGroupSnapshot
// answer (members not ready yet), and never updates it
// (sidecar-controller/groupsnapshot_helper.go, updateGroupSnapshotContentStatus);
// while the VolumeGroupSnapshot is not ready the snapshot-controller
// rewrites every member content's status from that list on each sync
// (common-controller/groupsnapshot_controller_helper.go,
// createSnapshotsForGroupSnapshotContent and
// updateVolumeSnapshotContentStatus), so a member the sidecar already saw
// ready goes back to false; and the sidecar neither requeues a content it
// saw ready nor syncs on status-only changes (utils.ShouldEnqueueContentChange),
// so it looks again only at its resync period (15m). A member not ready
// yet is an error: the work retries it with backoff, and every change of
// the content brings it back at once.
func (s *Snapshotter) markMemberReady(ctx context.Context, c *crdv1.VolumeSnapshotContent) error {
	if contentReady(c) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	handle := *c.Status.SnapshotHandle
	snap, err := s.lookUp(ctx, handle)
	if err != nil || snap == nil {
		return err
	}
	if !snap.GetReadyToUse() {
		return fmt.Errorf("member snapshot %s of content %s is not ready_to_use yet", handle, c.Name)
	}
	// The resourceVersion makes it a compare-and-swap: a content changed
	// meanwhile is judged again from the cache.
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": c.ResourceVersion},
		"status":   map[string]any{"readyToUse": true, "error": nil},
	})
	if err != nil {
		return err
	}
	_, err = s.client.Resource(snapshotapi.VolumeSnapshotContents).Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err == nil {
		klog.FromContext(ctx).Info("Marked group member ready to use", "content", c.Name, "snapshot", handle)
	}
	return err
}

// recordMember looks the member snapshot up and records its
// accessible_topology on content name. A snapshot the driver no longer
// has leaves nothing to record: its content is being deleted.
func (s *Snapshotter) recordMember(ctx context.Context, content, handle string) error {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	snap, err := s.lookUp(ctx, handle)
	if err != nil || snap == nil {
		return err
	}
	return s.record(ctx, &createTarget{content: content}, snap.GetAccessibleTopology())
}

// lookUp reads one snapshot: with GetSnapshot when the plugin has
// GET_SNAPSHOT (CSI: "MUST implement this GetSnapshot RPC call if it has
// GET_SNAPSHOT capability"), else with ListSnapshots filtered by ID, which
// every snapshotting plugin serves. nil: the plugin does not have it.
func (s *Snapshotter) lookUp(ctx context.Context, handle string) (*csi.Snapshot, error) {
	if s.getSnapshot {
		resp, err := s.controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: handle})
		if status.Code(err) == codes.NotFound {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("GetSnapshot of member snapshot %s: %w", handle, err)
		}
		return resp.GetSnapshot(), nil
	}
	resp, err := s.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: handle})
	if err != nil {
		return nil, fmt.Errorf("ListSnapshots of member snapshot %s: %w", handle, err)
	}
	for _, e := range resp.GetEntries() {
		if e.GetSnapshot().GetSnapshotId() == handle {
			return e.GetSnapshot(), nil
		}
	}
	return nil, nil
}
