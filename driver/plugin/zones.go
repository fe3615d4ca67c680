package plugin

import (
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/zonepath/zonepath/driver/world"
)

func allZones(t *world.Topology) []int {
	out := make([]int, len(t.Zones))
	for i := range out {
		out[i] = i
	}
	return out
}

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

// zoneIndex resolves a zone ID stored in state. A zone removed from the
// topology file since is reported as -1 and matches nothing.
func (p *Plugin) zoneIndex(id string) int {
	if i, ok := p.topo.Index(id); ok {
		return i
	}
	return -1
}

// zoneSegment is the segment of a stored zone ID, also for a zone that
// has left the topology file since the object was made.
func (p *Plugin) zoneSegment(id string) map[string]string {
	if i, ok := p.topo.Index(id); ok {
		return p.topo.Segment(i)
	}
	region, zone, _ := strings.Cut(id, "/")
	return p.topo.SegmentOf(region, zone)
}

func (p *Plugin) zoneNames(zones []int) string {
	names := make([]string, 0, len(zones))
	for _, i := range zones {
		names = append(names, p.topo.Zones[i].ID())
	}
	return "[" + strings.Join(names, " ") + "]"
}

func wrapInt64(v int64) *wrapperspb.Int64Value { return wrapperspb.Int64(v) }
