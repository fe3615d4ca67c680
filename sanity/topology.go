package sanity

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/gomega"
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
	sort.Strings(parts)
	return "[" + strings.Join(parts, " ") + "]"
}

func keysOf(ts ...*csi.Topology) []string {
	set := map[string]bool{}
	for _, t := range ts {
		for k := range t.GetSegments() {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// driver answers what the plugin under test advertises.
type driver struct {
	sc *sanity.TestContext
}

func (d driver) pluginCapability(c csi.PluginCapability_Service_Type) bool {
	resp, err := csi.NewIdentityClient(d.sc.ControllerConn).GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
	Expect(err).NotTo(HaveOccurred(), "GetPluginCapabilities")
	for _, cap := range resp.GetCapabilities() {
		if cap.GetService().GetType() == c {
			return true
		}
	}
	return false
}

func (d driver) controllerCapability(c csi.ControllerServiceCapability_RPC_Type) bool {
	resp, err := csi.NewControllerClient(d.sc.ControllerConn).ControllerGetCapabilities(context.Background(), &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return false // no controller service
	}
	for _, cap := range resp.GetCapabilities() {
		if cap.GetRpc().GetType() == c {
			return true
		}
	}
	return false
}

func (d driver) nodeInfo() *csi.NodeGetInfoResponse {
	resp, err := csi.NewNodeClient(d.sc.Conn).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	Expect(err).NotTo(HaveOccurred(), "NodeGetInfo")
	return resp
}

// segments is the configured list, or the node's own segment.
func (d driver) segments() []*csi.Topology {
	if segs := config().Segments; len(segs) > 0 {
		return toCSI(segs...)
	}
	if t := d.nodeInfo().GetAccessibleTopology(); t != nil {
		return []*csi.Topology{t}
	}
	return nil
}
