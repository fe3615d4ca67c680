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

// placedIn checks a volume's accessible_topology got against a requisite
// it was created for, by what TopologyRequirement.requisite makes a MUST:
// "the provisioned volume MUST be accessible from at least one of the
// requisite topologies". A segment of got counts when it meets one of
// requisite (meets): {region} is accessible from a zone of its region,
// and a volume segment carrying fewer keys than the requisite (EBS-style:
// the node's vendor zone, topology.kubernetes.io/zone and OS keys in the
// requisite, only topology.kubernetes.io/zone on the volume) is
// accessible from it when every key it does carry agrees. Segments beyond
// the requisite are the x > n case, "the SP ... MAY choose the remaining
// x-n unique topologies from the list of all possible topologies"
// (regional volumes, replicated arrays): a segment meeting no requisite
// segment is allowed beside one that does, and reported as a WARN naming
// what was seen. An empty got says the volume is accessible from
// everywhere (Volume.accessible_topology: "the CO MAY assume the volume
// is equally accessible from all nodes in the cluster"), which meets any
// requisite and is reported the same way.
func placedIn(what string, got, requisite []*csi.Topology) error {
	if len(got) > 0 && !meetsAny(got, requisite) {
		return fmt.Errorf("%s accessible from %s, none of it in the requisite %s", what, formatAll(got), formatAll(requisite))
	}
	beyond := slices.ContainsFunc(got, func(g *csi.Topology) bool { return !meetsAny([]*csi.Topology{g}, requisite) })
	if len(got) == 0 || beyond {
		warn(mayUsed, "volume accessible beyond requisite", fmt.Sprintf("%s for requisite %s accessible from %s (TopologyRequirement x > n: the SP MAY choose the remaining x-n topologies)", what, formatAll(requisite), accessibleText(got)))
	}
	return nil
}

// accessibleText describes where a volume with accessible_topology topo
// is accessible from.
func accessibleText(topo []*csi.Topology) string {
	if len(topo) == 0 {
		return "everywhere (no accessible_topology)"
	}
	return formatAll(topo)
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
