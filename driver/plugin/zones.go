package plugin

import (
	"errors"
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
// unconstrained). A malformed requirement is INVALID_ARGUMENT. A valid
// requisite none of whose segments names a zone of this driver is a
// request that cannot be satisfied where it asks: RESOURCE_EXHAUSTED
// (spec.md CreateVolume Errors, "Unable to provision in
// accessible_topology"; CreateSnapshot Errors, "Not enough resources to
// create snapshot").
func (p *Plugin) candidates(req *csi.TopologyRequirement) ([]int, error) {
	zones, err := p.topo.Candidates(req)
	switch {
	case errors.Is(err, world.ErrNoZone):
		return nil, status.Errorf(codes.ResourceExhausted, "accessibility_requirements: %v", err)
	case err != nil:
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
	return map[string]string{p.topo.Keys.Region: region, p.topo.Keys.Zone: zone}
}

func (p *Plugin) zoneNames(zones []int) string {
	names := make([]string, 0, len(zones))
	for _, i := range zones {
		names = append(names, p.topo.Zones[i].ID())
	}
	return "[" + strings.Join(names, " ") + "]"
}

func wrapInt64(v int64) *wrapperspb.Int64Value { return wrapperspb.Int64(v) }
