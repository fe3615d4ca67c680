package sanity

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

func toCSI(segs ...map[string]string) []*csi.Topology {
	out := make([]*csi.Topology, len(segs))
	for i, s := range segs {
		out[i] = &csi.Topology{Segments: s}
	}
	return out
}

// inside reports whether segment s lies within segment r: s carries every
// pair of r (it may be more specific, never broader).
func inside(s, r *csi.Topology) bool {
	for k, v := range r.GetSegments() {
		if s.GetSegments()[k] != v {
			return false
		}
	}
	return len(r.GetSegments()) > 0
}

// meets reports whether segments a and b share a place: one lies within
// the other ({region} meets {region, zone} of that region).
func meets(a, b *csi.Topology) bool { return inside(a, b) || inside(b, a) }

// meetsAny reports whether some segment of got meets some segment of want.
func meetsAny(got, want []*csi.Topology) bool {
	for _, g := range got {
		for _, w := range want {
			if meets(g, w) {
				return true
			}
		}
	}
	return false
}

// usableFrom reports whether a snapshot with accessible_topology topo
// claims to be usable from seg: seg lies within one of its segments, or
// topo is empty, which claims every place (csi.proto
// Snapshot.accessible_topology: "If it is not specified, the CO MAY assume
// the snapshot is equally usable from all topologies in the cluster").
func usableFrom(topo []*csi.Topology, seg *csi.Topology) bool {
	for _, t := range topo {
		if inside(seg, t) {
			return true
		}
	}
	return len(topo) == 0
}

// usableText describes where a snapshot with accessible_topology topo
// claims to be usable from.
func usableText(topo []*csi.Topology) string {
	if len(topo) == 0 {
		return "everywhere (no accessible_topology)"
	}
	return formatAll(topo)
}

// within checks that every segment of got lies within one of allowed.
func within(got, allowed []*csi.Topology) error {
	for _, g := range got {
		ok := false
		for _, a := range allowed {
			ok = ok || inside(g, a)
		}
		if !ok {
			return fmt.Errorf("segment %s lies outside %s", format(g), formatAll(allowed))
		}
	}
	return nil
}

// sameSegments compares topologies as sets: the spec gives no order.
func sameSegments(a, b []*csi.Topology) bool {
	return formatAll(a) == formatAll(b)
}

func format(t *csi.Topology) string { return formatSegment(t.GetSegments()) }

// formatSegment renders a segment as the driver's messages do,
// {key=value,...} in key order, so a vendor's log and ours read alike.
func formatSegment(seg map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(seg)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + seg[k])
	}
	return "{" + b.String() + "}"
}

func formatAll(ts []*csi.Topology) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = format(t)
	}
	slices.Sort(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func keysOf(ts ...*csi.Topology) []string {
	set := map[string]bool{}
	for _, t := range ts {
		for k := range t.GetSegments() {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
