package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/state"
)

// groupPrefix starts the IDs of group snapshots.
const groupPrefix = "zpg-"

// Group snapshots and topology. CreateVolumeGroupSnapshotRequest carries
// no accessibility_requirements (csi.proto v1.13), so every member is
// placed as a CreateSnapshot of its volume without them would be: by the
// same code (placeSnapshot, placement.go), with the group's parameters as
// the class's, and each member Snapshot carries its own
// accessible_topology. A group may span zones: nothing in the spec or in
// KEP-5943 ties a group to one place, and the members' topologies say
// where each is usable from. See the driver README, "Group snapshots".

// GroupControllerGetCapabilities implements csi.GroupControllerServer.
func (p *Plugin) GroupControllerGetCapabilities(context.Context, *csi.GroupControllerGetCapabilitiesRequest) (*csi.GroupControllerGetCapabilitiesResponse, error) {
	return &csi.GroupControllerGetCapabilitiesResponse{Capabilities: []*csi.GroupControllerServiceCapability{{
		Type: &csi.GroupControllerServiceCapability_Rpc{Rpc: &csi.GroupControllerServiceCapability_RPC{
			Type: csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT,
		}},
	}}}, nil
}

// groupSpec is a validated CreateVolumeGroupSnapshotRequest; member is
// the CreateSnapshot every member is placed as, without its source.
type groupSpec struct {
	name    string
	sources []string
	member  snapshotSpec
}

func (p *Plugin) groupSpec(req *csi.CreateVolumeGroupSnapshotRequest) (*groupSpec, error) {
	if err := checkName("name", req.GetName()); err != nil {
		return nil, err
	}
	sources := req.GetSourceVolumeIds()
	if len(sources) == 0 {
		return nil, status.Error(codes.InvalidArgument, "source_volume_ids is required")
	}
	for i, id := range sources {
		if err := checkID(fmt.Sprintf("source_volume_ids[%d]", i), id); err != nil {
			return nil, err
		}
		if slices.Contains(sources[:i], id) {
			return nil, status.Errorf(codes.InvalidArgument, "source_volume_ids lists volume %s twice", id)
		}
	}
	spec := &groupSpec{name: req.GetName(), sources: sources, member: snapshotSpec{copies: 1, params: req.GetParameters()}}
	if err := spec.member.parseParams(p.topo); err != nil {
		return nil, err
	}
	return spec, nil
}

// CreateVolumeGroupSnapshot implements csi.GroupControllerServer. Every
// source is looked up and checked first: it exists (NOT_FOUND), its zone
// is up (UNAVAILABLE, outage.go: nothing is read in a zone that is down).
// The members' data is cut then, outside the store lock, as one point of
// the tenants' write order or not at all (groupcut.go),
// and every member and the group are recorded in one store update: all or
// nothing. A member that does not fit (a zone's snapshot quota, say)
// fails the whole group with that member's code, and the data already cut
// is removed (spec: "SP SHOULD also do clean up and make sure no
// snapshots are leaked").
func (p *Plugin) CreateVolumeGroupSnapshot(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest) (*csi.CreateVolumeGroupSnapshotResponse, error) {
	spec, err := p.groupSpec(req)
	if err != nil {
		return nil, err
	}
	if existing := p.store.GroupByName(spec.name); existing != nil {
		return p.groupResponse(existing, checkSameGroup(existing, spec))
	}
	sources, err := p.groupSources(spec.sources)
	if err != nil {
		return nil, err
	}
	gid := newID(groupPrefix)
	ids, err := p.cutMembers(ctx, sources)
	if err != nil {
		return nil, err
	}
	g, err := newRecord[state.Group]{
		kind:     "group snapshot",
		id:       gid,
		byName:   func(tx *state.Tx) *state.Group { return tx.GroupByName(spec.name) },
		same:     func(g *state.Group) error { return checkSameGroup(g, spec) },
		place:    func(tx *state.Tx) (*state.Group, error) { return p.placeGroup(tx, gid, ids, spec) },
		put:      (*state.Tx).PutGroup,
		dropData: func() error { return p.dropMembers(ids) },
	}.commit(ctx, p.store)
	return p.groupResponse(g, err)
}

// groupSources are the source volumes' records, each checked before
// anything is read: NOT_FOUND for one that does not exist, and
// UNAVAILABLE for one in a zone that is down, as CreateSnapshot answers
// for it (outage.go).
func (p *Plugin) groupSources(ids []string) ([]*state.Volume, error) {
	out := make([]*state.Volume, 0, len(ids))
	for _, id := range ids {
		v := p.store.Volume(id)
		if v == nil {
			return nil, status.Errorf(codes.NotFound, "source volume %s does not exist", id)
		}
		if err := p.volumeReadable(v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, p.checkGroupZones(out)
}

// checkGroupZones refuses a group across zones under the topology file's
// snapshots.groupsInOneZone: spec.md CreateVolumeGroupSnapshot Errors,
// "Cannot snapshot multiple volumes together", FAILED_PRECONDITION.
func (p *Plugin) checkGroupZones(sources []*state.Volume) error {
	if !p.topo.Snapshots.GroupsInOneZone || len(sources) == 0 {
		return nil
	}
	for _, v := range sources[1:] {
		if v.Zone != sources[0].Zone {
			return status.Errorf(codes.FailedPrecondition, "volumes %s (zone %s) and %s (zone %s) cannot be snapshotted together: this driver cuts a group within one zone",
				sources[0].ID, sources[0].Zone, v.ID, v.Zone)
		}
	}
	return nil
}

func (p *Plugin) groupResponse(g *state.Group, err error) (*csi.CreateVolumeGroupSnapshotResponse, error) {
	if err != nil {
		return nil, err
	}
	out, err := p.csiGroup(g)
	if err != nil {
		return nil, err
	}
	return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: out}, nil
}

// dropCut removes the data of members cut before err and returns err.
func (p *Plugin) dropCut(ctx context.Context, ids []string, err error) error {
	if derr := p.dropMembers(ids); derr != nil {
		klog.FromContext(ctx).Error(derr, "Removing data of a group snapshot that was not created", "snapshotIDs", ids)
	}
	return err
}

func (p *Plugin) dropMembers(ids []string) error {
	var errs []error
	for _, id := range ids {
		if err := p.data.deleteSnapshot(id); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d snapshots: %v", len(errs), len(ids), errs)
	}
	return nil
}

// placeGroup places and puts each member exactly as placeSnapshot places
// a snapshot of its volume; tx.Usage counts the members put before, so a
// zone's quota counts each member that lands there.
func (p *Plugin) placeGroup(tx *state.Tx, gid string, ids []string, spec *groupSpec) (*state.Group, error) {
	created := time.Now().UTC()
	for i, source := range spec.sources {
		member := spec.member
		member.source = source
		snap, err := p.placeSnapshot(tx, ids[i], &member)
		if err != nil {
			return nil, status.Errorf(status.Code(err), "group snapshot %q, member of volume %s: %s", spec.name, source, status.Convert(err).Message())
		}
		snap.Group, snap.Created = gid, created
		tx.PutSnapshot(snap)
	}
	return &state.Group{
		ID: gid, Name: spec.name, SourceVolumes: spec.sources, Snapshots: ids,
		Parameters: spec.member.params, Created: created,
	}, nil
}

// checkSameGroup applies the spec's idempotency: a group of the name made
// from the same source_volume_ids (in any order) and parameters is the
// one asked for; other volumes or parameters are ALREADY_EXISTS
// (CreateVolumeGroupSnapshot Errors, "already exists but is incompatible
// with the specified source_volume_ids or parameters").
func checkSameGroup(g *state.Group, spec *groupSpec) error {
	if !sameSet(g.SourceVolumes, spec.sources) {
		return status.Errorf(codes.AlreadyExists, "group snapshot %q already exists as %s of volumes %v, not of %v", spec.name, g.ID, g.SourceVolumes, spec.sources)
	}
	if !maps.Equal(g.Parameters, spec.member.params) {
		return status.Errorf(codes.AlreadyExists, "group snapshot %q already exists as %s with parameters %v, not %v", spec.name, g.ID, g.Parameters, spec.member.params)
	}
	return nil
}

// sameSet reports whether a and b hold the same strings, each once.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// csiGroup is the group's VolumeGroupSnapshot, its members as a Get of
// each would return them. A group whose member record is gone is the
// driver's fault, INTERNAL: members are deleted only with their group.
func (p *Plugin) csiGroup(g *state.Group) (*csi.VolumeGroupSnapshot, error) {
	out := &csi.VolumeGroupSnapshot{GroupSnapshotId: g.ID, CreationTime: timestamppb.New(g.Created), ReadyToUse: !g.Deleting}
	for _, id := range g.Snapshots {
		s := p.store.Snapshot(id)
		if s == nil {
			return nil, status.Errorf(codes.Internal, "group snapshot %s lost its member snapshot %s", g.ID, id)
		}
		member := p.csiSnapshot(s)
		// csi.proto VolumeGroupSnapshot.ready_to_use: "If any snapshot
		// in the list ... has ready_to_use set to false, the SP MUST set
		// this field to false."
		out.ReadyToUse = out.ReadyToUse && member.GetReadyToUse()
		out.Snapshots = append(out.Snapshots, member)
	}
	return out, nil
}

// checkSnapshotIDs compares the CO's snapshot_ids with the group's
// members. The field is REQUIRED, yet csi-sanity sends none, and the SP
// "SHOULD check this field and report an error if it has the ability to
// detect a mismatch": an empty list is taken as no claim, and any other
// list must be exactly the members (INVALID_ARGUMENT, "Snapshot list
// mismatch").
func checkSnapshotIDs(g *state.Group, ids []string) error {
	if len(ids) == 0 || sameSet(g.Snapshots, ids) {
		return nil
	}
	return status.Errorf(codes.InvalidArgument, "snapshot_ids %v do not match the members %v of group snapshot %s", ids, g.Snapshots, g.ID)
}

// DeleteVolumeGroupSnapshot implements csi.GroupControllerServer: it
// deletes the group and its members together (spec: "will delete a volume
// group snapshot as well as all individual snapshots that are part of
// this volume group snapshot"); an unknown group is already deleted.
//
// A member with a copy in a zone that is down is UNAVAILABLE before
// anything is deleted, as DeleteSnapshot answers for it (outage.go). The
// work goes in three steps so that a failure leaves a record a retry
// finds: the group is marked Deleting, the members' data removed, then
// the records deleted. A retry of a group marked Deleting (or a failure
// to remove data, INTERNAL) does the last two steps again; removing data
// already gone succeeds.
func (p *Plugin) DeleteVolumeGroupSnapshot(ctx context.Context, req *csi.DeleteVolumeGroupSnapshotRequest) (*csi.DeleteVolumeGroupSnapshotResponse, error) {
	id := req.GetGroupSnapshotId()
	if err := checkID("group_snapshot_id", id); err != nil {
		return nil, err
	}
	var members []string
	err := p.store.Update(func(tx *state.Tx) error {
		g := tx.Group(id)
		if g == nil {
			return nil
		}
		if err := p.checkGroupDeletable(tx, g, req.GetSnapshotIds()); err != nil {
			return err
		}
		members = g.Snapshots
		if !g.Deleting {
			marked := *g
			marked.Deleting = true
			tx.PutGroup(&marked)
		}
		return nil
	})
	if err != nil || members == nil {
		return nil, err
	}
	if err := p.dropMembers(members); err != nil {
		return nil, status.Errorf(codes.Internal, "deleting data of group snapshot %s (retry to finish): %v", id, err)
	}
	if err := p.deleteGroupRecords(id, members); err != nil {
		return nil, err
	}
	return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
}

// checkGroupDeletable checks the CO's snapshot_ids and that every
// member's copies can be reached.
func (p *Plugin) checkGroupDeletable(tx *state.Tx, g *state.Group, snapshotIDs []string) error {
	if err := checkSnapshotIDs(g, snapshotIDs); err != nil {
		return err
	}
	for _, m := range g.Snapshots {
		if s := tx.Snapshot(m); s != nil {
			if err := p.snapshotReachable(s); err != nil {
				return status.Errorf(codes.Unavailable, "group snapshot %s: %s", g.ID, status.Convert(err).Message())
			}
		}
	}
	return nil
}

// deleteGroupRecords deletes a group and its members' records, whose data
// is gone.
func (p *Plugin) deleteGroupRecords(id string, members []string) error {
	err := p.store.Update(func(tx *state.Tx) error {
		for _, m := range members {
			tx.DeleteSnapshot(m)
		}
		tx.DeleteGroup(id)
		return nil
	})
	for _, m := range members {
		p.snapshotEntries.forget(m)
	}
	return err
}

// GetVolumeGroupSnapshot implements csi.GroupControllerServer.
func (p *Plugin) GetVolumeGroupSnapshot(ctx context.Context, req *csi.GetVolumeGroupSnapshotRequest) (*csi.GetVolumeGroupSnapshotResponse, error) {
	id := req.GetGroupSnapshotId()
	if err := checkID("group_snapshot_id", id); err != nil {
		return nil, err
	}
	g := p.store.Group(id)
	if g == nil {
		return nil, status.Errorf(codes.NotFound, "group snapshot %s does not exist", id)
	}
	if err := checkSnapshotIDs(g, req.GetSnapshotIds()); err != nil {
		return nil, err
	}
	out, err := p.csiGroup(g)
	if err != nil {
		return nil, err
	}
	return &csi.GetVolumeGroupSnapshotResponse{GroupSnapshot: out}, nil
}
