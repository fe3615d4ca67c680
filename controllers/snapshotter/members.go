package snapshotter

import (
	"context"
	"fmt"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	crdv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	listers "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
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
// topology".
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

// wants a member not recorded yet.
func (m *members) wants(c *crdv1.VolumeSnapshotContent) bool {
	_, recorded := m.done.Load(c.Name)
	return !recorded && m.isMember(c)
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
	if err := m.snap.recordMember(ctx, name, *c.Status.SnapshotHandle); err != nil {
		return err
	}
	m.done.Store(name, true)
	return nil
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
