package plugin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
	"github.com/zonepath/zonepath/driver/world"
)

// Placement: where a new volume or snapshot goes, and which zones an
// existing snapshot is usable from. Package world only turns a
// TopologyRequirement into candidate zones, preferred first; every choice
// among them is made here, inside the store Update that records the new
// object, so the usage it reads counts every write before it:
//
//   - a volume goes to the first candidate with room, among the zones its
//     content source allows (a clone's zone, the zones a snapshot is
//     usable from) and that are not down;
//   - a snapshot's copies go to candidates with snapshot quota left, or,
//     without requirements, to its source volume's zone first, then that
//     region, then the rest; under snapshots.sourceZoneOnly only to the
//     source volume's zone. Group members are placed by the same code.
//
// The driver README's "Placement" and "Snapshots" paragraphs say what users
// see; outage.go says why a zone that is down is RESOURCE_EXHAUSTED here.

// candidates orders the zones accessibility_requirements allow (nil:
// unconstrained). A malformed requirement is INVALID_ARGUMENT, and so is a
// well-formed requisite none of whose segments names a zone of this
// driver (a misspelt zone): spec.md's General Error Table, "Invalid or
// unsupported field in the request ... has an invalid value", since "COs
// SHALL only specify topological accessibility information supported by
// the SP" (CreateSnapshotRequest.accessibility_requirements), while the
// RESOURCE_EXHAUSTED rows apply only when the field "is valid"
// (CreateVolume Errors: "although the accessible_topology field is
// valid"; CreateSnapshot Errors: "the accessibility_requirements field is
// valid but ..."). The code is final for the Kubernetes sidecars, so a
// VolumeSnapshot naming a misspelt zone can be deleted; the message names
// the segments, which the user reads in the object's events. Segments
// naming no zone beside one that does are skipped (a requisite needs "at
// least one" place, TopologyRequirement.requisite), as are preferred ones.
func (p *Plugin) candidates(req *csi.TopologyRequirement) ([]int, error) {
	zones, err := p.topo.Candidates(req)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "accessibility_requirements: %v", err)
	}
	return zones, nil
}

// liveZones drops the zones that are down from candidates. None left is
// RESOURCE_EXHAUSTED naming them, for the CO to try elsewhere.
func (p *Plugin) liveZones(candidates []int, what string) ([]int, error) {
	var out, down []int
	for _, i := range candidates {
		if p.zoneDown(i) {
			down = append(down, i)
		} else {
			out = append(out, i)
		}
	}
	if len(out) == 0 && len(down) > 0 {
		return nil, status.Errorf(codes.ResourceExhausted, "zones %s are down (outage): no zone left for %s", p.zoneNames(down), what)
	}
	return out, nil
}

// narrow keeps the requested zones the source allows, in request order.
func (p *Plugin) narrow(requested, allowed []int, source string) ([]int, error) {
	var out []int
	for _, i := range requested {
		if slices.Contains(allowed, i) {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return nil, status.Errorf(codes.ResourceExhausted, "requested zones %s are outside the zones of %s", p.zoneNames(requested), source)
	}
	return out, nil
}

// sourcePlaceable runs placement's source and outage checks (sourceZones,
// liveZones) before a clone or restore copies any data: with every zone
// the source allows down (a clone's source zone, a zonal snapshot's
// copies) the copy would read a zone that is down, which nothing may do
// (outage.go), only for placeVolume to refuse the volume afterwards. The
// store update checks again, authoritatively; only room is left to it.
func (p *Plugin) sourcePlaceable(spec *volumeSpec) error {
	var err error
	p.store.View(func(r state.Reader) {
		var zones []int
		if zones, err = p.sourceZones(r, spec); err == nil {
			_, err = p.liveZones(zones, "volume "+spec.name)
		}
	})
	return err
}

// placeVolume chooses the zone of a new volume: the first candidate with
// room, among zones the source allows.
func (p *Plugin) placeVolume(tx *state.Tx, id string, spec *volumeSpec) (*state.Volume, error) {
	candidates, err := p.sourceZones(tx.Reader, spec)
	if err != nil {
		return nil, err
	}
	if candidates, err = p.liveZones(candidates, "volume "+spec.name); err != nil {
		return nil, err
	}
	for _, i := range candidates {
		if !p.fits(tx, i, spec.size) {
			continue
		}
		replicas, ok := p.replicaZones(tx, i, candidates, spec.size)
		if !ok {
			continue
		}
		return &state.Volume{
			ID: id, Name: spec.name, CapacityBytes: spec.size, Zone: p.topo.Zones[i].ID(), Replicas: replicas, Block: spec.block,
			Parameters: spec.params, MutableParameters: spec.mutable, SourceSnapshot: spec.sourceSnapshot, SourceVolume: spec.sourceVolume, Created: time.Now().UTC(),
		}, nil
	}
	if p.topo.VolumeReplicas > 1 {
		return nil, status.Errorf(codes.ResourceExhausted, "no room for %d bytes in %d zones of one region, the first among zones %s", spec.size, p.topo.VolumeReplicas, p.zoneNames(candidates))
	}
	return nil, status.Errorf(codes.ResourceExhausted, "no room for %d bytes in zones %s", spec.size, p.zoneNames(candidates))
}

// fits reports whether zone i is up and has room for size more bytes.
func (p *Plugin) fits(tx *state.Tx, i int, size int64) bool {
	z := p.topo.Zones[i]
	return !p.zoneDown(i) && size <= room(z, tx.Usage(z.ID()).Bytes)
}

// replicaZones chooses the other zones of a regional volume whose first
// zone is first (volumes.replicas): zones of first's region that are up
// and have room, the candidates first (the requisite and preferred
// zones, a clone's source zones), then the region's other zones in file
// order. Those may lie outside the requisite: the volume is accessible
// from its first zone, a requisite one, and TopologyRequirement lets the
// SP "choose the remaining x-n unique topologies from the list of all
// possible topologies". ok is false when the region has too few.
func (p *Plugin) replicaZones(tx *state.Tx, first int, candidates []int, size int64) (zones []string, ok bool) {
	want := p.topo.VolumeReplicas - 1
	region := p.topo.Zones[first].Region
	for _, i := range append(slices.Clone(candidates), allZones(p.topo)...) {
		z := p.topo.Zones[i]
		if len(zones) == want {
			break
		}
		if i == first || z.Region != region || slices.Contains(zones, z.ID()) || !p.fits(tx, i, size) {
			continue
		}
		zones = append(zones, z.ID())
	}
	return zones, len(zones) == want
}

// sourceZones narrows the requested zones to those the content source
// allows: a clone stays in its source's zone; a restore goes where the
// snapshot is usable from. With no overlap the request is valid but
// cannot be met where it asks, which is RESOURCE_EXHAUSTED (spec:
// CreateVolume Errors, "Unable to provision in accessible_topology"); a
// CO such as the external-provisioner then reschedules rather than
// giving up.
func (p *Plugin) sourceZones(tx state.Reader, spec *volumeSpec) ([]int, error) {
	requested := spec.candidates
	if requested == nil {
		requested = allZones(p.topo)
	}
	switch {
	case spec.sourceVolume != "":
		src := tx.Volume(spec.sourceVolume)
		if src == nil {
			return nil, status.Errorf(codes.NotFound, "source volume %s does not exist", spec.sourceVolume)
		}
		if err := checkSourceFits(src.CapacityBytes, spec.size, src.Block, spec.block, "volume", src.ID); err != nil {
			return nil, err
		}
		// A regional source is read through any of its replicas, so the
		// clone may start in any of its zones.
		home := p.zoneIndexes(src.Zones())
		if !p.volumeAccessibility() {
			return home, nil
		}
		return p.narrow(requested, home, fmt.Sprintf("source volume %s in %v", src.ID, src.Zones()))
	case spec.sourceSnapshot != "":
		snap := tx.Snapshot(spec.sourceSnapshot)
		if snap == nil {
			return nil, status.Errorf(codes.NotFound, "source snapshot %s does not exist", spec.sourceSnapshot)
		}
		// checkSource compared access types and sizes before copying;
		// a snapshot never changes.
		if p.topo.Snapshots.RestoreWhereCutOnly {
			// Also without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS: the CO
			// "MAY assume" a snapshot without accessible_topology is
			// usable everywhere, and a refusal is RESOURCE_EXHAUSTED
			// as for any place the source does not allow.
			return p.narrow(requested, p.copyZones(snap), fmt.Sprintf("snapshot %s, restorable only where it is cut (%s)", snap.ID, strings.Join(snap.Zones, ", ")))
		}
		if !p.snapshotAccessibility() {
			return requested, nil
		}
		usable := p.snapshotZones(snap)
		return p.narrow(requested, usable, fmt.Sprintf("snapshot %s usable from %s", snap.ID, world.FormatSegments(p.snapshotSegments(snap))))
	}
	return requested, nil
}

// placeSnapshot chooses the zones holding the copies: without
// requirements the source volume's zone, then its region's other zones,
// then the rest; with requirements the candidates (preferred first, then
// requisite). Zones without quota left are skipped, except the source
// zone of a snapshot without requirements; fewer zones than the copies
// asked for (or than the requirements allow) is RESOURCE_EXHAUSTED (spec:
// CreateSnapshot Errors, "Not enough resources to create snapshot").
func (p *Plugin) placeSnapshot(tx *state.Tx, id string, spec *snapshotSpec) (*state.Snapshot, error) {
	src := tx.Volume(spec.source)
	if src == nil {
		return nil, status.Errorf(codes.NotFound, "source volume %s does not exist", spec.source)
	}
	if err := p.volumeReadable(src); err != nil {
		return nil, err
	}
	candidates, err := p.snapshotCandidates(tx, src, spec)
	if err != nil {
		return nil, err
	}
	if candidates, err = p.liveZones(candidates, "snapshot "+spec.name); err != nil {
		return nil, err
	}
	want := min(spec.copies, len(candidates))
	var zones []string
	for _, i := range candidates {
		if !p.snapshotRoom(tx, i) {
			continue
		}
		zones = append(zones, p.topo.Zones[i].ID())
		if len(zones) == want {
			break
		}
	}
	if len(zones) < want || want == 0 {
		return nil, status.Errorf(codes.ResourceExhausted, "snapshot quota exhausted: %d of %d copies fit in zones %s", len(zones), want, p.zoneNames(candidates))
	}
	return &state.Snapshot{
		ID: id, Name: spec.name, SourceVolume: src.ID, SizeBytes: src.CapacityBytes, Zones: zones,
		RegionWide: spec.regionWide, Global: spec.global, Parameters: spec.params, Created: time.Now().UTC(),
	}, nil
}

// snapshotRoom reports whether zone i's snapshot quota takes a copy.
func (p *Plugin) snapshotRoom(tx *state.Tx, i int) bool {
	z := p.topo.Zones[i]
	return z.SnapshotQuota < 0 || tx.Usage(z.ID()).Snapshots < z.SnapshotQuota
}

// snapshotCandidates orders the zones a snapshot of src may have copies
// in.
func (p *Plugin) snapshotCandidates(tx *state.Tx, src *state.Volume, spec *snapshotSpec) ([]int, error) {
	if p.topo.Snapshots.SourceZoneOnly {
		return p.sourceZoneOnly(src, spec)
	}
	if spec.candidates == nil {
		// Nothing asked for another place, so the first copy stays with
		// its source, as the README promises; a full source zone is not
		// a reason to move the data to another zone or region.
		home := p.homeZone(src)
		switch {
		case home < 0:
			return nil, status.Errorf(codes.ResourceExhausted, "zones %v of source volume %s, where a snapshot without accessibility_requirements stays, have left the topology", src.Zones(), src.ID)
		case !p.snapshotRoom(tx, home):
			return nil, status.Errorf(codes.ResourceExhausted, "snapshot quota exhausted in zone %s of source volume %s, where a snapshot without accessibility_requirements stays", p.topo.Zones[home].ID(), src.ID)
		}
		return p.nearZones(home), nil
	}
	// A region-wide snapshot goes where any other would: a copy in a
	// requisite zone makes it usable from that zone and, beyond the
	// requisite, from the rest of its region (TopologyRequirement x > n:
	// the SP "MAY choose the remaining x-n unique topologies").
	return spec.candidates, nil
}

// homeZone is where a snapshot of src without requirements stays: the
// first of its zones that is up (a regional volume is read through any
// replica), else its first zone; -1 when they have all left the file.
func (p *Plugin) homeZone(src *state.Volume) int {
	zones := p.zoneIndexes(src.Zones())
	for _, i := range zones {
		if !p.zoneDown(i) {
			return i
		}
	}
	if len(zones) == 0 {
		return -1
	}
	return zones[0]
}

// sourceZoneOnly is the one candidate of a driver that cuts snapshots
// only where their source volume lives (snapshots.sourceZoneOnly): a zone
// of the source volume (the first requisite one of a regional volume's),
// when the requisite allows one. Anything else is a snapshot the driver
// cannot make, RESOURCE_EXHAUSTED (spec.md CreateSnapshot Errors, "Not
// enough resources to create snapshot"), naming the source's zones so the
// user sees where the class must allow. So is more than one copy.
func (p *Plugin) sourceZoneOnly(src *state.Volume, spec *snapshotSpec) ([]int, error) {
	home := p.homeZone(src)
	if spec.candidates != nil {
		home = -1
		if i := slices.IndexFunc(spec.candidates, func(c int) bool { return slices.Contains(src.Zones(), p.topo.Zones[c].ID()) }); i >= 0 {
			home = spec.candidates[i]
		}
	}
	switch {
	case spec.copies > 1:
		return nil, status.Errorf(codes.ResourceExhausted, "%s=%d: this driver cuts one copy of a snapshot, in its source volume's zone %v", ParamSnapshotCopies, spec.copies, src.Zones())
	case spec.candidates != nil && home < 0:
		return nil, status.Errorf(codes.ResourceExhausted, "source volume %s is in zone %v, outside the requisite topology %s: this driver cuts snapshots only in their source volume's zone",
			src.ID, src.Zones(), world.FormatSegments(spec.requirement.GetRequisite()))
	case home < 0:
		return nil, status.Errorf(codes.ResourceExhausted, "zone %v of source volume %s, the only zone this driver cuts its snapshots in, has left the topology", src.Zones(), src.ID)
	}
	return []int{home}, nil
}

// nearZones orders zones for copies of a snapshot of a volume in zone
// home: home first, then its region, then the rest.
func (p *Plugin) nearZones(home int) []int {
	out := []int{home}
	region := p.topo.Zones[home].Region
	for pass := 0; pass < 2; pass++ {
		for i, z := range p.topo.Zones {
			if i != home && (z.Region == region) == (pass == 0) {
				out = append(out, i)
			}
		}
	}
	return out
}

// snapshotZones lists the zones a snapshot is usable from.
func (p *Plugin) snapshotZones(s *state.Snapshot) []int {
	if s.Global {
		return allZones(p.topo)
	}
	var out []int
	for _, seg := range p.snapshotSegments(s) {
		zones, _ := p.topo.Select(seg.GetSegments())
		for _, z := range zones {
			if !slices.Contains(out, z) {
				out = append(out, z)
			}
		}
	}
	return out
}

// copyZones are the zones holding a snapshot's copies.
func (p *Plugin) copyZones(s *state.Snapshot) []int {
	out := make([]int, 0, len(s.Zones))
	for _, z := range s.Zones {
		if i := p.zoneIndex(z); i >= 0 {
			out = append(out, i)
		}
	}
	return out
}

// snapshotSegments is the snapshot's accessible_topology: one
// zone segment per copy, one region segment per region of the copies, or
// none for a global snapshot (CSI spec, Snapshot.accessible_topology: "If
// it is not specified, the CO MAY assume the snapshot is equally usable
// from all topologies in the cluster"). It is computed from the record
// alone, so Create, List and Get agree.
func (p *Plugin) snapshotSegments(s *state.Snapshot) []*csi.Topology {
	if s.Global {
		return nil
	}
	var out []*csi.Topology
	seen := map[string]bool{}
	for _, z := range s.Zones {
		seg := p.zoneSegment(z)
		// Under keys.omitZone every copy's segment is its region's
		// already, reported once per region as a region-wide snapshot's.
		if (s.RegionWide || p.topo.Keys.OmitZone) && !p.topo.Keys.OmitRegion {
			region, _, _ := strings.Cut(z, "/")
			if seen[region] {
				continue
			}
			seen[region] = true
			seg = p.topo.RegionSegment(region)
		}
		out = append(out, &csi.Topology{Segments: seg})
	}
	return out
}

// zoneIndexes resolves stored zone IDs, leaving out zones that have left
// the topology file.
func (p *Plugin) zoneIndexes(ids []string) []int {
	var out []int
	for _, id := range ids {
		if i := p.zoneIndex(id); i >= 0 {
			out = append(out, i)
		}
	}
	return out
}
