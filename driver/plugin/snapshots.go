package plugin

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zonepath/zonepath/driver/state"
	"github.com/zonepath/zonepath/driver/world"
)

// Snapshot parameters (VolumeSnapshotClass.parameters).
const (
	// ParamSnapshotScope is "zone" (default): usable from the zones
	// holding a copy; "region": usable from every zone of their region;
	// or "global": usable from every zone, with no accessible_topology.
	ParamSnapshotScope = DefaultName + "/snapshotScope"
	// ParamSnapshotCopies is the number of zones that hold a copy
	// (default 1), each counting against its zone's snapshot quota.
	ParamSnapshotCopies = DefaultName + "/snapshotCopies"
	maxSnapshotCopies   = 16
)

// snapshotSpec is a validated CreateSnapshotRequest.
type snapshotSpec struct {
	name, source string
	regionWide   bool
	global       bool
	copies       int
	params       map[string]string
	requirement  *csi.TopologyRequirement
	candidates   []int // nil: no accessibility_requirements
}

// CreateSnapshot implements csi.ControllerServer. The snapshot's data is
// cut before its record is written, outside the store lock; see
// CreateVolume.
func (p *Plugin) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	spec, err := p.snapshotSpec(req)
	if err != nil {
		return nil, err
	}
	if existing := p.store.SnapshotByName(spec.name); existing != nil {
		if err := p.checkSameSnapshot(existing, spec); err != nil {
			return nil, err
		}
		return &csi.CreateSnapshotResponse{Snapshot: p.csiSnapshot(existing)}, nil
	}
	src := p.store.Volume(spec.source)
	if src == nil {
		return nil, status.Errorf(codes.NotFound, "source volume %s does not exist", spec.source)
	}
	if err := p.volumeReadable(src); err != nil {
		return nil, err // its data cannot be read
	}
	id := newID(snapshotPrefix)
	if err := p.data.snapshot(id, src.ID, src.Block); err != nil {
		return nil, dataStatus(err, "cutting snapshot %s of volume %s", id, src.ID)
	}
	snap, err := newRecord[state.Snapshot]{
		kind:     "snapshot",
		id:       id,
		byName:   func(tx *state.Tx) *state.Snapshot { return tx.SnapshotByName(spec.name) },
		same:     func(s *state.Snapshot) error { return p.checkSameSnapshot(s, spec) },
		place:    func(tx *state.Tx) (*state.Snapshot, error) { return p.placeSnapshot(tx, id, spec) },
		put:      (*state.Tx).PutSnapshot,
		dropData: func() error { return p.data.deleteSnapshot(id) },
	}.commit(ctx, p.store)
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: p.csiSnapshot(snap)}, nil
}

func (p *Plugin) snapshotSpec(req *csi.CreateSnapshotRequest) (*snapshotSpec, error) {
	if err := checkName("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := checkID("source_volume_id", req.GetSourceVolumeId()); err != nil {
		return nil, err
	}
	spec := &snapshotSpec{name: req.GetName(), source: req.GetSourceVolumeId(), copies: 1, params: req.GetParameters(), requirement: req.GetAccessibilityRequirements()}
	if err := spec.parseParams(p.topo); err != nil {
		return nil, err
	}
	if spec.requirement == nil {
		return spec, nil
	}
	// CSI: accessibility_requirements SHALL NOT be specified unless the
	// SP has the SNAPSHOT_ACCESSIBILITY_CONSTRAINTS plugin capability.
	if !p.snapshotAccessibility() {
		return nil, status.Error(codes.InvalidArgument, "accessibility_requirements given, but this plugin does not advertise SNAPSHOT_ACCESSIBILITY_CONSTRAINTS")
	}
	candidates, err := p.candidates(spec.requirement)
	if err != nil {
		return nil, err
	}
	spec.candidates = candidates
	return spec, nil
}

// parseParams reads the class parameters over the topology file's
// defaults: a snapshotScope parameter wins over snapshots.defaultScope.
func (s *snapshotSpec) parseParams(topo *world.Topology) error {
	if err := checkParameters(s.params, ParamSnapshotScope, ParamSnapshotCopies); err != nil {
		return err
	}
	scope := topo.Snapshots.DefaultScope
	for k, v := range s.params {
		switch k {
		case ParamSnapshotScope:
			if v != world.ScopeZone && v != world.ScopeRegion && v != world.ScopeGlobal {
				return status.Errorf(codes.InvalidArgument, "parameter %s=%q: must be zone, region or global", k, v)
			}
			if v != world.ScopeZone && topo.Snapshots.RestoreWhereCutOnly {
				return status.Errorf(codes.InvalidArgument, "parameter %s=%q: this driver restores a snapshot only where it is cut (snapshots.restoreWhereCutOnly), so no snapshot can be usable from a wider place", k, v)
			}
			if v == world.ScopeRegion && topo.Keys.OmitRegion {
				return status.Errorf(codes.InvalidArgument, "parameter %s=%q: this driver reports no region key (keys.omitRegion), so no snapshot can be usable from a region", k, v)
			}
			scope = v
		case ParamSnapshotCopies:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxSnapshotCopies {
				return status.Errorf(codes.InvalidArgument, "parameter %s=%q: must be a number from 1 to %d", k, v, maxSnapshotCopies)
			}
			s.copies = n
		}
	}
	s.regionWide = scope == world.ScopeRegion
	s.global = scope == world.ScopeGlobal
	return nil
}

// checkSameSnapshot applies CreateSnapshot idempotency by the spec's
// words: a snapshot of the name "successfully cut and ready to use ...,
// and ... usable from accessibility_requirements" gets "0 OK" (spec.md
// CreateSnapshot). Usable from the requirement means usable from at least
// one requisite zone (TopologyRequirement.requisite: "accessible from at
// least one of the requisite topologies"; x > n: the SP "MAY choose the
// remaining x-n unique topologies"), so a snapshot also usable from zones
// outside the requisite is returned too. Without a requisite any snapshot
// of the name is (the SP "MAY choose where the provisioned snapshot is
// usable from"), and a global snapshot is usable from every zone.
// Parameters are not compared: the CreateSnapshot table names none.
//
// The same name with another source is ALREADY_EXISTS (CreateSnapshot
// Errors, "incompatible with the specified volume_id"), and so, as the
// driver README documents, is a requisite the snapshot is not usable from
// at all: the spec's OK does not apply, and CreateVolume's table gives
// ALREADY_EXISTS for the same conflict with accessibility_requirements.
func (p *Plugin) checkSameSnapshot(s *state.Snapshot, spec *snapshotSpec) error {
	if s.SourceVolume != spec.source {
		return status.Errorf(codes.AlreadyExists, "snapshot %q already exists as %s of volume %s, not of %s", spec.name, s.ID, s.SourceVolume, spec.source)
	}
	if len(spec.requirement.GetRequisite()) == 0 || s.Global {
		return nil
	}
	if slices.ContainsFunc(p.snapshotZones(s), func(z int) bool { return slices.Contains(spec.candidates, z) }) {
		return nil
	}
	return status.Errorf(codes.AlreadyExists, "snapshot %q already exists as %s, usable from %s, none of which is in the requisite topology %s",
		spec.name, s.ID, world.FormatSegments(p.snapshotSegments(s)), world.FormatSegments(spec.requirement.GetRequisite()))
}

func (p *Plugin) csiSnapshot(s *state.Snapshot) *csi.Snapshot {
	out := &csi.Snapshot{
		SnapshotId: s.ID, SourceVolumeId: s.SourceVolume, SizeBytes: s.SizeBytes,
		CreationTime: timestamppb.New(s.Created), ReadyToUse: p.snapshotReady(s), GroupSnapshotId: s.Group,
	}
	if p.snapshotAccessibility() {
		out.AccessibleTopology = p.snapshotSegments(s)
	}
	return out
}

// snapshotReady: a snapshot is ready_to_use snapshots.readyAfter after it
// was cut, as one a cloud still uploads ("ready_to_use SHALL be false"
// while the snapshot is processed, spec.md "The ready_to_use Parameter").
// It is derived from the durable creation time, so a restarted driver
// answers the same.
func (p *Plugin) snapshotReady(s *state.Snapshot) bool {
	return !time.Now().Before(s.Created.Add(p.topo.Snapshots.ReadyAfter.Duration))
}

// checkSnapshotReady refuses to restore a snapshot that is not
// ready_to_use (csi.proto Snapshot.ready_to_use: "ready to use as a
// volume_content_source"), before any data is read. The CreateVolume
// error table has no row for it; it is UNAVAILABLE, gRPC's code for "a
// transient condition, which can be corrected by retrying with a
// backoff", which the state becomes by itself. FAILED_PRECONDITION would
// tell the caller not to retry "until the system state has been
// explicitly fixed".
func (p *Plugin) checkSnapshotReady(s *state.Snapshot) error {
	if p.snapshotReady(s) {
		return nil
	}
	ready := s.Created.Add(p.topo.Snapshots.ReadyAfter.Duration)
	return status.Errorf(codes.Unavailable, "source snapshot %s is not ready_to_use yet (it will be in %s): retry later",
		s.ID, time.Until(ready).Round(time.Second))
}

// DeleteSnapshot implements csi.ControllerServer; an unknown snapshot is
// already deleted (spec: DeleteSnapshot is idempotent). A member of a
// group snapshot goes only with its group: the spec lets the SP refuse it
// (DeleteSnapshot Errors, "Snapshot is part of a group", INVALID_ARGUMENT).
func (p *Plugin) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := checkID("snapshot_id", id); err != nil {
		return nil, err
	}
	err := deletion[state.Snapshot]{
		kind: "snapshot",
		id:   id,
		get:  func(tx *state.Tx) *state.Snapshot { return tx.Snapshot(id) },
		keep: func(_ *state.Tx, s *state.Snapshot) error {
			if s.Group != "" {
				return status.Errorf(codes.InvalidArgument, "snapshot %s is a member of group snapshot %s: delete the group (DeleteVolumeGroupSnapshot)", id, s.Group)
			}
			return p.snapshotReachable(s)
		},
		remove:   func(tx *state.Tx) { tx.DeleteSnapshot(id) },
		entries:  p.snapshotEntries,
		dropData: func() error { return p.data.deleteSnapshot(id) },
	}.commit(p.store)
	if err != nil {
		return nil, err
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// ListSnapshots implements csi.ControllerServer.
func (p *Plugin) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "max_entries %d must not be negative", req.GetMaxEntries())
	}
	if id := req.GetSnapshotId(); id != "" {
		// A filter naming no snapshot this driver could have made
		// matches nothing (spec: ListSnapshots returns an empty list).
		resp := &csi.ListSnapshotsResponse{}
		if checkID("snapshot_id", id) == nil {
			if s := p.store.Snapshot(id); s != nil && (req.GetSourceVolumeId() == "" || s.SourceVolume == req.GetSourceVolumeId()) {
				resp.Entries = []*csi.ListSnapshotsResponse_Entry{{Snapshot: p.csiSnapshot(s)}}
			}
		}
		return resp, nil
	}
	from, err := decodeToken(req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	snaps, next := p.store.ListSnapshots(from, int(req.GetMaxEntries()), req.GetSourceVolumeId())
	if next != "" {
		next = encodeToken(next)
	}
	return snapshotPage(p.snapshotEntries, snaps, next), nil
}

// GetSnapshot implements csi.ControllerServer.
func (p *Plugin) GetSnapshot(ctx context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	if err := checkID("snapshot_id", req.GetSnapshotId()); err != nil {
		return nil, err
	}
	s := p.store.Snapshot(req.GetSnapshotId())
	if s == nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %s does not exist", req.GetSnapshotId())
	}
	return &csi.GetSnapshotResponse{Snapshot: p.csiSnapshot(s)}, nil
}
