package plugin

import (
	"strings"

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
