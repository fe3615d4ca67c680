package plugin

import (
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// Zone outages. A fault rule with action.outage (driver/faults/outage.go)
// takes the zones of its segment down until the rule is removed. The data
// of a zone that is down stays on disk untouched, as a site that lost
// power keeps its disks: nothing is deleted, changed or read there while
// it is down, and everything is back as it was when the rule is lifted.
//
// Codes. The spec has no error row for a back end that cannot be reached.
// For calls that need the zone's data (Node stage, publish, stats and
// expand; ControllerPublish, ControllerExpand, ControllerModifyVolume
// and a CreateVolume retried with new mutable parameters, DeleteVolume,
// DeleteSnapshot, CreateSnapshot of a volume there, CreateVolume cloning
// a volume there) it is UNAVAILABLE:
// gRPC's "the service is currently unavailable ... most likely a
// transient condition, which can be corrected by retrying with a
// backoff", which is what a CO should do; FAILED_PRECONDITION would tell
// it to fix something, and NOT_FOUND that the volume is gone, neither
// true. Placement that needs a new object in a down zone (CreateVolume,
// CreateSnapshot whose requisite leaves only such zones, a restore whose
// snapshot copies are all there) is RESOURCE_EXHAUSTED: the request is
// valid but "can not be provisioned with the specified topology
// constraints" (spec.md CreateVolume Errors, "Unable to provision in
// accessible_topology"; CreateSnapshot Errors, "Not enough resources to
// create snapshot ... the accessibility_requirements field is valid but a
// snapshot can not be created"), and a CO reschedules elsewhere.
// GetCapacity reports no capacity in a zone that is down, so that a CO
// does not pick it in the first place. Clone and restore check their
// source before any data is copied, so a refused one reads nothing
// (volumes.go, checkSource). A region-wide or global snapshot is stored
// at its scope, as a cloud's regional snapshot store is, so it restores
// into any zone of that scope that is up (e2e scenario 20); a zonal one
// only from a copy in a zone that is up. A regional volume
// (volumes.replicas) stays usable through its replicas in zones that are
// up (volumeReadable); calls that change it wait for all of them.

// zoneDown reports whether zone i is down; -1 (a zone that left the
// topology file) is not an outage.
func (p *Plugin) zoneDown(i int) bool {
	return i >= 0 && p.cfg.Faults.Down(p.topo.Segment(i))
}

// zoneIDDown is zoneDown for a zone ID stored in a record.
func (p *Plugin) zoneIDDown(id string) bool { return p.cfg.Faults.Down(p.zoneSegment(id)) }

// volumeReachable is UNAVAILABLE for a volume with a zone that is down:
// the calls that change a volume (delete, expand, modify) change every
// replica, and nothing is changed in a zone that is down.
func (p *Plugin) volumeReachable(v *state.Volume) error {
	for _, z := range v.Zones() {
		if p.zoneIDDown(z) {
			return status.Errorf(codes.Unavailable, "volume %s is in zone %s, which is down (outage); retry when it is back", v.ID, z)
		}
	}
	return nil
}

// volumeReadable is UNAVAILABLE for a volume none of whose zones is up.
// A regional volume (volumes.replicas) is read and served through a
// replica in a zone that is up: its snapshots, clones and group members
// are cut, and nodes of that zone publish it, while another of its zones
// is down. For a volume in one zone it is volumeReachable.
func (p *Plugin) volumeReadable(v *state.Volume) error {
	zones := v.Zones()
	if slices.ContainsFunc(zones, func(z string) bool { return !p.zoneIDDown(z) }) {
		return nil
	}
	return status.Errorf(codes.Unavailable, "volume %s is in zones %v, which are down (outage); retry when one is back", v.ID, zones)
}

// snapshotReachable is UNAVAILABLE for a snapshot with a copy in a zone
// that is down: deleting it would leave that copy behind.
func (p *Plugin) snapshotReachable(s *state.Snapshot) error {
	for _, z := range s.Zones {
		if p.zoneIDDown(z) {
			return status.Errorf(codes.Unavailable, "snapshot %s has a copy in zone %s, which is down (outage); retry when it is back", s.ID, z)
		}
	}
	return nil
}

// nodeVolumeReachable is UNAVAILABLE when this node's zone is down or,
// where this process also holds the records, every zone of the volume is:
// a node of a zone that is up serves a regional volume through its
// replica there.
func (p *Plugin) nodeVolumeReachable(id string) error {
	if p.cfg.ServeNode && p.zoneDown(p.cfg.Node.Zone) {
		return status.Errorf(codes.Unavailable, "zone %s of node %s is down (outage); retry when it is back", p.topo.Zones[p.cfg.Node.Zone].ID(), p.cfg.NodeID)
	}
	if v := p.store.Volume(id); v != nil {
		return p.volumeReadable(v)
	}
	return nil
}

// healthOf is a volume's health given why it cannot be reached (nil:
// it can): one entry per (status, reason), as VolumeHealthEntry requires
// ("The Plugin MUST NOT return multiple VolumeHealthEntry messages for the
// same volume with the same (status, reason) combination"). The
// controller and node views both come from the zone's state, so they
// cannot disagree about an outage.
func healthOf(id string, unreachable error) *csi.VolumeHealth {
	h := &csi.VolumeHealth{VolumeId: id}
	if unreachable != nil {
		h.HealthStatuses = []*csi.VolumeHealth_VolumeHealthEntry{{
			Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: ReasonZoneDown, Message: status.Convert(unreachable).Message(),
		}}
	}
	return h
}

// controllerHealth is a volume's health as the controller sees it:
// INACCESSIBLE when no zone of it is up, and for a regional volume with
// some of its zones down DEGRADED, "usable but ... not operating
// optimally" (csi.proto VolumeHealthErrorType): it is served through the
// others, and INACCESSIBLE, which the CO "MAY interpret ... as volume not
// being accessible from all nodes", would be wrong.
func (p *Plugin) controllerHealth(v *state.Volume) *csi.VolumeHealth {
	if err := p.volumeReadable(v); err != nil {
		return healthOf(v.ID, err)
	}
	h := &csi.VolumeHealth{VolumeId: v.ID}
	if err := p.volumeReachable(v); err != nil {
		h.HealthStatuses = []*csi.VolumeHealth_VolumeHealthEntry{{
			Status: csi.VolumeHealthErrorType_DEGRADED, Reason: ReasonReplicaZoneDown, Message: status.Convert(err).Message(),
		}}
	}
	return h
}

// ReasonReplicaZoneDown is the VolumeHealthEntry reason of a regional
// volume with a zone down and another up.
const ReasonReplicaZoneDown = "ReplicaZoneDown"

// ReasonZoneDown is the VolumeHealthEntry and StorageBackendHealth reason
// of a zone outage.
const ReasonZoneDown = "ZoneDown"
