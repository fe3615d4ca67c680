package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
	"github.com/zonepath/zonepath/driver/world"
)

const defaultVolumeSize = 1 << 30

// controllerRPCs are the controller capabilities this driver always
// reports; controllerCapabilities adds those that can be switched off.
var controllerRPCs = []csi.ControllerServiceCapability_RPC_Type{
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
	csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
	csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
	csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
	csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES,
	csi.ControllerServiceCapability_RPC_GET_VOLUME,
	csi.ControllerServiceCapability_RPC_GET_CAPACITY,
	csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
	csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
	csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
	csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
	csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
}

// ControllerGetCapabilities implements csi.ControllerServer.
func (p *Plugin) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	rpcs := append(p.controllerCapabilities(), p.controllerHealthRPCs()...)
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: wrapAll(rpcs, func(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
		return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
	})}, nil
}

// CreateVolume implements csi.ControllerServer.
//
// The backing data is made before the record, outside the store lock, so
// that filling a volume from a large snapshot never stalls unrelated
// requests; if the record then cannot be written the data is removed. A
// crash in between leaves an orphan directory, never a volume without
// data.
func (p *Plugin) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	spec, err := p.volumeSpec(req)
	if err != nil {
		return nil, err
	}
	if p.store.VolumeByName(spec.name) != nil {
		vol, err := p.reuseVolume(spec)
		if err != nil {
			return nil, err
		}
		if vol != nil {
			return &csi.CreateVolumeResponse{Volume: p.csiVolume(vol)}, nil
		}
		// Deleted meanwhile: the name is free again.
	}
	if err := p.checkSource(spec); err != nil {
		return nil, err
	}
	id := newID(volumePrefix)
	if err := p.data.createVolume(id, spec.block, spec.size, spec.sourceSnapshot, spec.sourceVolume); err != nil {
		return nil, dataStatus(err, "creating data of volume %s", id)
	}
	vol, err := newRecord[state.Volume]{
		kind:     "volume",
		id:       id,
		byName:   func(tx *state.Tx) *state.Volume { return tx.VolumeByName(spec.name) },
		reuse:    func(tx *state.Tx, v *state.Volume) (*state.Volume, error) { return p.sameVolume(tx, v, spec) },
		place:    func(tx *state.Tx) (*state.Volume, error) { return p.placeVolume(tx, id, spec) },
		put:      (*state.Tx).PutVolume,
		dropData: func() error { return p.data.deleteVolume(id) },
	}.commit(ctx, p.store)
	if err != nil {
		return nil, err
	}
	return &csi.CreateVolumeResponse{Volume: p.csiVolume(vol)}, nil
}

// checkSource fails early, before any data is copied, when the content
// source is unknown (spec: CreateVolume Errors, "Source does not exist"),
// of the other access type ("Source incompatible or not supported"),
// larger than the new volume ("Unsupported capacity_range"), a snapshot
// not ready_to_use yet (checkSnapshotReady), in a zone
// that is down, or allowing only zones that are down (sourcePlaceable): a
// refused request copies nothing. The store update checks existence and a clone's
// size again, authoritatively, since a source volume can grow meanwhile;
// access types and snapshots never change.
func (p *Plugin) checkSource(spec *volumeSpec) error {
	switch {
	case spec.sourceSnapshot != "":
		snap := p.store.Snapshot(spec.sourceSnapshot)
		if snap == nil {
			return status.Errorf(codes.NotFound, "source snapshot %s does not exist", spec.sourceSnapshot)
		}
		if err := p.checkSnapshotReady(snap); err != nil {
			return err
		}
		if err := checkSourceFits(snap.SizeBytes, spec.size, p.snapshotIsBlock(snap), spec.block, "snapshot", snap.ID); err != nil {
			return err
		}
		// A zonal snapshot whose copies are all in zones that are down
		// is RESOURCE_EXHAUSTED here (outage.go). A region-wide or global
		// one is stored at that scope, like a cloud's regional snapshot
		// store, and restores into a zone of its scope that is up.
		return p.sourcePlaceable(spec)
	case spec.sourceVolume != "":
		src := p.store.Volume(spec.sourceVolume)
		if src == nil {
			return status.Errorf(codes.NotFound, "source volume %s does not exist", spec.sourceVolume)
		}
		if err := checkSourceFits(src.CapacityBytes, spec.size, src.Block, spec.block, "volume", src.ID); err != nil {
			return err
		}
		// A clone reads its source's data, which nothing may do while
		// that zone is down (outage.go): UNAVAILABLE, as for every call
		// that needs the zone's data.
		if err := p.volumeReadable(src); err != nil {
			return err
		}
		return p.sourcePlaceable(spec)
	}
	return nil
}

// snapshotIsBlock tells a block volume's snapshot from a filesystem's: by
// its source volume while that exists, else by its data file.
func (p *Plugin) snapshotIsBlock(s *state.Snapshot) bool {
	if src := p.store.Volume(s.SourceVolume); src != nil {
		return src.Block
	}
	return p.data.isBlockSnapshot(s.ID)
}

// volumeSpec is a validated CreateVolumeRequest.
type volumeSpec struct {
	name           string
	size           int64
	required       int64
	limit          int64
	block          bool
	params         map[string]string
	mutable        map[string]string
	sourceSnapshot string
	sourceVolume   string
	candidates     []int // nil: unconstrained
	requirement    *csi.TopologyRequirement
}

func (p *Plugin) volumeSpec(req *csi.CreateVolumeRequest) (*volumeSpec, error) {
	if err := checkName("name", req.GetName()); err != nil {
		return nil, err
	}
	if err := checkVolumeParameters(req.GetParameters()); err != nil {
		return nil, err
	}
	if err := p.checkCreateMutable(req.GetMutableParameters()); err != nil {
		return nil, err
	}
	block, err := accessType(req.GetVolumeCapabilities())
	if err != nil {
		return nil, err
	}
	if err := checkMountFlags(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	spec := &volumeSpec{name: req.GetName(), block: block, params: req.GetParameters(), mutable: req.GetMutableParameters(), requirement: req.GetAccessibilityRequirements()}
	if spec.required, spec.limit, spec.size, err = p.capacity(req.GetCapacityRange(), block); err != nil {
		return nil, err
	}
	if src := req.GetVolumeContentSource(); src != nil {
		switch {
		case src.GetSnapshot() != nil:
			spec.sourceSnapshot = src.GetSnapshot().GetSnapshotId()
			err = checkID("volume_content_source.snapshot.snapshot_id", spec.sourceSnapshot)
		case src.GetVolume() != nil:
			spec.sourceVolume = src.GetVolume().GetVolumeId()
			err = checkID("volume_content_source.volume.volume_id", spec.sourceVolume)
		default:
			err = status.Error(codes.InvalidArgument, "volume_content_source names neither a snapshot nor a volume")
		}
		if err != nil {
			return nil, err
		}
	}
	if p.volumeAccessibility() {
		if spec.candidates, err = p.candidates(spec.requirement); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// capacity applies CSI's capacity_range rules: the volume is at least
// required_bytes and at most limit_bytes (neither "MUST NOT be negative");
// unset means defaultVolumeSize, or less when the limit or the largest
// volume of the access type is smaller.
func (p *Plugin) capacity(r *csi.CapacityRange, block bool) (required, limit, size int64, err error) {
	required, limit = r.GetRequiredBytes(), r.GetLimitBytes()
	switch {
	case required < 0 || limit < 0:
		return 0, 0, 0, status.Error(codes.InvalidArgument, "capacity_range: bytes must not be negative")
	case limit > 0 && required > limit:
		return 0, 0, 0, status.Errorf(codes.InvalidArgument, "capacity_range: required_bytes %d exceeds limit_bytes %d", required, limit)
	}
	largest := p.maxVolumeSize(block)
	size = required
	if size == 0 {
		size = min(defaultVolumeSize, largest)
		if limit > 0 {
			size = min(size, limit)
		}
	}
	if size > largest {
		return 0, 0, 0, status.Errorf(codes.OutOfRange, "capacity_range: %d bytes exceed the largest volume of this access type, %d bytes (GetCapacity's maximum_volume_size)", size, largest)
	}
	return required, limit, size, nil
}

// accessType validates volume_capabilities and reports block access.
func accessType(caps []*csi.VolumeCapability) (block bool, err error) {
	if len(caps) == 0 {
		return false, status.Error(codes.InvalidArgument, "volume_capabilities are required")
	}
	var mount, blk bool
	for i, c := range caps {
		switch {
		case c.GetBlock() != nil:
			blk = true
		case c.GetMount() != nil:
			mount = true
		default:
			return false, status.Errorf(codes.InvalidArgument, "volume_capabilities[%d]: access_type must be block or mount", i)
		}
		if c.GetAccessMode() == nil || c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN {
			return false, status.Errorf(codes.InvalidArgument, "volume_capabilities[%d]: access_mode is required", i)
		}
	}
	if mount && blk {
		return false, status.Error(codes.InvalidArgument, "volume_capabilities: a volume is either block or mount, not both")
	}
	return blk, nil
}

// reuseVolume answers a CreateVolume whose name a volume already has:
// that volume, made compatible by sameVolume, or nil when it is gone.
func (p *Plugin) reuseVolume(spec *volumeSpec) (*state.Volume, error) {
	var vol *state.Volume
	err := p.store.Update(func(tx *state.Tx) error {
		v := tx.VolumeByName(spec.name)
		if v == nil {
			return nil
		}
		var err error
		vol, err = p.sameVolume(tx, v, spec)
		return err
	})
	return vol, err
}

// sameVolume accepts the existing volume v of the request's name
// (checkSameVolume) and gives it the request's mutable_parameters.
//
// A volume "compatible with the specified ... mutable_parameters" gets
// "0 OK" (spec.md CreateVolume), but the ALREADY_EXISTS row of CreateVolume
// Errors lists capacity_range, volume_capabilities, parameters,
// accessibility_requirements and volume_content_source, not
// mutable_parameters: they are the values a volume may change to at any
// time (ControllerModifyVolume), so a volume whose mutable parameters
// differ is not incompatible, it is not yet modified. A CreateVolume that
// timed out after the volume was made, retried after the user moved the
// claim to another VolumeAttributesClass, carries the new class's values;
// ALREADY_EXISTS would be final for the external-provisioner and leave the
// claim Pending. The retry instead applies them as ControllerModifyVolume
// does (setMutable; volumeSpec validated them as that RPC does, so invalid
// ones were already INVALID_ARGUMENT) and answers OK with the volume.
func (p *Plugin) sameVolume(tx *state.Tx, v *state.Volume, spec *volumeSpec) (*state.Volume, error) {
	if err := p.checkSameVolume(v, spec); err != nil {
		return nil, err
	}
	return p.setMutable(tx, v, spec.mutable)
}

// checkSameVolume applies CSI CreateVolume idempotency: a volume of the
// name that "already exists, is accessible from accessibility_requirements,
// and is compatible with the specified capacity_range, volume_capabilities,
// parameters ..." gets "0 OK" (spec.md CreateVolume); otherwise
// ALREADY_EXISTS (CreateVolume Errors, "Volume already exists but is
// incompatible with the specified capacity_range, volume_capabilities,
// parameters, accessibility_requirements or volume_content_source").
// Accessible from the requirement means from at least one requisite zone
// (TopologyRequirement.requisite), which for a volume in one zone is its
// zone and for a regional one any of its zones; without a requisite every
// zone qualifies. Mutable parameters are
// not compared: sameVolume applies them.
func (p *Plugin) checkSameVolume(v *state.Volume, spec *volumeSpec) error {
	var why string
	switch {
	case v.CapacityBytes < spec.required || (spec.limit > 0 && v.CapacityBytes > spec.limit):
		why = fmt.Sprintf("its capacity %d is outside the requested range", v.CapacityBytes)
	case v.Block != spec.block:
		why = "its access type differs"
	case !maps.Equal(v.Parameters, spec.params):
		why = "its parameters differ"
	case v.SourceSnapshot != spec.sourceSnapshot || v.SourceVolume != spec.sourceVolume:
		why = "its volume_content_source differs"
	case spec.candidates != nil && len(spec.requirement.GetRequisite()) > 0 && !slices.ContainsFunc(p.zoneIndexes(v.Zones()), func(i int) bool { return slices.Contains(spec.candidates, i) }):
		why = fmt.Sprintf("it lives in %v, outside the requisite topology %s", v.Zones(), world.FormatSegments(spec.requirement.GetRequisite()))
	default:
		return nil
	}
	return status.Errorf(codes.AlreadyExists, "volume %q already exists as %s but %s", spec.name, v.ID, why)
}

func checkSourceFits(srcSize, size int64, srcBlock, block bool, kind, id string) error {
	if size < srcSize {
		return status.Errorf(codes.OutOfRange, "requested %d bytes, less than the %d bytes of source %s %s", size, srcSize, kind, id)
	}
	if srcBlock != block {
		return status.Errorf(codes.InvalidArgument, "source %s %s and the new volume differ in access type (block vs mount)", kind, id)
	}
	return nil
}

// DeleteVolume implements csi.ControllerServer. Deleting an unknown
// volume succeeds (spec: DeleteVolume is idempotent).
func (p *Plugin) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkID("volume_id", id); err != nil {
		return nil, err
	}
	err := deletion[state.Volume]{
		kind: "volume",
		id:   id,
		get:  func(tx *state.Tx) *state.Volume { return tx.Volume(id) },
		keep: func(tx *state.Tx, v *state.Volume) error {
			if tx.IsPublished(id) {
				return status.Errorf(codes.FailedPrecondition, "volume %s is still published to a node", id)
			}
			return p.volumeReachable(v)
		},
		remove:   func(tx *state.Tx) { tx.DeleteVolume(id) },
		entries:  p.volumeEntries,
		dropData: func() error { return p.data.deleteVolume(id) },
	}.commit(p.store)
	if err != nil {
		return nil, err
	}
	return &csi.DeleteVolumeResponse{}, nil
}

// ControllerGetVolume implements csi.ControllerServer.
func (p *Plugin) ControllerGetVolume(ctx context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	v := p.store.Volume(req.GetVolumeId())
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", req.GetVolumeId())
	}
	return &csi.ControllerGetVolumeResponse{
		Volume: p.csiVolume(v),
		Status: &csi.ControllerGetVolumeResponse_VolumeStatus{PublishedNodeIds: p.store.PublishedNodes(v.ID)},
	}, nil
}

// ListVolumes implements csi.ControllerServer.
func (p *Plugin) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "max_entries %d must not be negative", req.GetMaxEntries())
	}
	from, err := decodeToken(req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	vols, next := p.store.ListPublishedVolumes(from, int(req.GetMaxEntries()))
	if next != "" {
		next = encodeToken(next)
	}
	return volumePage(p.volumeEntries, vols, next), nil
}

// ValidateVolumeCapabilities implements csi.ControllerServer.
func (p *Plugin) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	block, err := accessType(req.GetVolumeCapabilities())
	if err != nil {
		return nil, err
	}
	if err := checkMap("volume_context", req.GetVolumeContext()); err != nil {
		return nil, err
	}
	if err := checkMap("parameters", req.GetParameters()); err != nil {
		return nil, err
	}
	v := p.store.Volume(req.GetVolumeId())
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", req.GetVolumeId())
	}
	if block != v.Block {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: "access type differs from the volume's"}, nil
	}
	if err := checkMountFlags(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	// CSI: confirmed "SHALL only be set if all the volume capabilities and
	// parameters specified in the request are supported".
	if err := checkVolumeParameters(req.GetParameters()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	if err := p.checkCreateMutable(req.GetMutableParameters()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
		MutableParameters: req.GetMutableParameters(),
	}}, nil
}

// GetCapacity implements csi.ControllerServer: the free bytes of the
// zones accessible_topology selects (all zones without it), and the
// largest volume of the access type one of them can still take. The
// access type is read from the capabilities alone: the external-provisioner
// sends them without an access mode.
func (p *Plugin) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if err := checkVolumeParameters(req.GetParameters()); err != nil {
		return nil, err
	}
	block := slices.ContainsFunc(req.GetVolumeCapabilities(), func(c *csi.VolumeCapability) bool { return c.GetBlock() != nil })
	zones := allZones(p.topo)
	if seg := req.GetAccessibleTopology(); seg != nil && p.volumeAccessibility() {
		var err error
		if zones, err = p.topo.Select(seg.GetSegments()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "accessible_topology: %v", err)
		}
	}
	var total, largest int64
	for _, i := range zones {
		free := p.regionalBytes(i)
		total = addCapped(total, free)
		largest = max(largest, free)
	}
	largest = min(largest, p.maxVolumeSize(block))
	resp := &csi.GetCapacityResponse{AvailableCapacity: total}
	if largest > 0 {
		resp.MaximumVolumeSize = wrapInt64(largest)
	}
	return resp, nil
}

// availableBytes is what zone i can still provision: none while it is
// down, where CreateVolume answers RESOURCE_EXHAUSTED (outage.go).
// GetCapacityResponse.available_capacity is "The available capacity, in
// bytes, of the storage that can be used to provision volumes", and
// maximum_volume_size "The largest size that may be used in a
// CreateVolumeRequest.capacity_range.required_bytes field": a zone that
// provisions nothing has 0 of either, so a CO reading CSIStorageCapacity
// stops scheduling claims there until the zone is back.
func (p *Plugin) availableBytes(i int) int64 {
	if p.zoneDown(i) {
		return 0
	}
	return p.freeBytes(i)
}

// regionalBytes is the largest volume whose first zone is i: its own
// availableBytes, and for regional volumes (volumes.replicas) no more than
// the other zones of its region that would take the replicas have, the
// (replicas-1)-th most; none when the region has too few zones up.
func (p *Plugin) regionalBytes(i int) int64 {
	free := p.availableBytes(i)
	want := p.topo.VolumeReplicas - 1
	if want == 0 {
		return free
	}
	var others []int64
	for j, z := range p.topo.Zones {
		if j != i && z.Region == p.topo.Zones[i].Region && !p.zoneDown(j) {
			others = append(others, p.availableBytes(j))
		}
	}
	if len(others) < want {
		return 0
	}
	slices.Sort(others)
	return min(free, others[len(others)-want])
}

func (p *Plugin) freeBytes(i int) int64 {
	z := p.topo.Zones[i]
	if z.CapacityBytes < 0 {
		return unlimitedCapacity
	}
	return max(0, z.CapacityBytes-p.store.ZoneUsage(z.ID()).Bytes)
}

// ControllerExpandVolume implements csi.ControllerServer.
func (p *Plugin) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkID("volume_id", id); err != nil {
		return nil, err
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity_range is required")
	}
	v := p.store.Volume(id)
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", id)
	}
	_, _, size, err := p.capacity(req.GetCapacityRange(), v.Block) // access types never change
	if err != nil {
		return nil, err
	}
	var vol *state.Volume
	err = p.store.Update(func(tx *state.Tx) error {
		v := tx.Volume(id)
		if v == nil {
			return status.Errorf(codes.NotFound, "volume %s does not exist", id)
		}
		vol = v
		if size <= v.CapacityBytes {
			return nil // already as large: expansion is idempotent
		}
		if err := p.volumeReachable(v); err != nil {
			return err
		}
		// Every replica grows, so every zone of the volume needs room.
		for _, zone := range v.Zones() {
			z, _ := p.topo.Zone(zone)
			if size-v.CapacityBytes > room(z, tx.Usage(zone).Bytes) {
				return noRoomToGrow(zone, id, size)
			}
		}
		grown := *v
		grown.CapacityBytes = size
		tx.PutVolume(&grown)
		vol = &grown
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The file grows after the record, and on every call, so a retry
	// after a failure here completes the expansion.
	if vol.Block {
		if err := p.data.resizeBlock(id, vol.CapacityBytes); err != nil {
			return nil, status.Errorf(codes.Internal, "resizing volume %s: %v", id, err)
		}
	}
	// A block volume's loop device on a node shows the new size only after
	// NodeExpandVolume (LOOP_SET_CAPACITY), so block volumes need it too.
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: vol.CapacityBytes, NodeExpansionRequired: true}, nil
}

// csiVolume renders a volume; accessible_topology only when the plugin
// advertises VOLUME_ACCESSIBILITY_CONSTRAINTS.
func (p *Plugin) csiVolume(v *state.Volume) *csi.Volume {
	out := &csi.Volume{VolumeId: v.ID, CapacityBytes: v.CapacityBytes, VolumeContext: volumeContext(v)}
	switch {
	case v.SourceSnapshot != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.SourceSnapshot}}}
	case v.SourceVolume != "":
		out.ContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.SourceVolume}}}
	}
	if p.volumeAccessibility() {
		// A regional volume lists every zone it is accessible from.
		out.AccessibleTopology = p.topo.ZoneSegments(v.Zones())
	}
	return out
}

// noRoomToGrow answers an expansion the volume's zone has no room for
// now. It is RESOURCE_EXHAUSTED, not OUT_OF_RANGE: OUT_OF_RANGE is
// ControllerExpandVolume's "Unsupported capacity_range ... the capacity
// range is not allowed by the Plugin", whose recovery is "Caller MUST fix
// the capacity range before retrying", and which the external-resizer
// takes as final (ControllerResizeInfeasible); capacity's sizes above the
// largest volume keep it. A full zone is temporary: gRPC's
// RESOURCE_EXHAUSTED, "perhaps the entire file system is out of space",
// is the code the spec gives the same condition elsewhere (CreateVolume
// Errors, "Unable to provision ... (e.g. quota issues) is addressed
// before retrying with exponential backoff"; CreateVolumeGroupSnapshot
// Errors, "Not enough space ... MAY succeed if space is freed up"), and
// the resizer retries it with backoff, so room freed later (a volume of
// the zone deleted or shrunk) resumes the expansion with no user action.
func noRoomToGrow(zone, id string, size int64) error {
	return status.Errorf(codes.ResourceExhausted, "zone %s has no room now to grow volume %s to %d bytes; retried, it succeeds once room is freed", zone, id, size)
}
