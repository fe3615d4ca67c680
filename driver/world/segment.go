package world

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Segment returns the CSI segment a volume in zone i is accessible from.
func (t *Topology) Segment(i int) map[string]string {
	z := t.Zones[i]
	return t.SegmentOf(z.Region, z.Name)
}

// SegmentOf is the segment of a zone by its names, also of a zone no
// longer in the file: without the region key under keys.omitRegion,
// the region alone under keys.omitZone.
func (t *Topology) SegmentOf(region, zone string) map[string]string {
	if t.Keys.OmitZone {
		return t.RegionSegment(region)
	}
	if t.Keys.OmitRegion {
		return map[string]string{t.Keys.Zone: zone}
	}
	return map[string]string{t.Keys.Region: region, t.Keys.Zone: zone}
}

// ZoneSegments are the segments of the zones with the given IDs
// ("region/zone"), in order: the accessible_topology of a volume in them.
func (t *Topology) ZoneSegments(ids []string) []*csi.Topology {
	out := make([]*csi.Topology, 0, len(ids))
	for _, id := range ids {
		region, zone, _ := strings.Cut(id, "/")
		out = append(out, &csi.Topology{Segments: t.SegmentOf(region, zone)})
	}
	return out
}

// RegionSegment returns the segment covering every zone of a region.
func (t *Topology) RegionSegment(region string) map[string]string {
	return map[string]string{t.Keys.Region: region}
}

// NodeSegment returns the segment of a node in zone i, on rack (empty
// when the zone has no racks). It fails when the rack is not in the zone.
func (t *Topology) NodeSegment(i int, rack string) (map[string]string, error) {
	seg := t.Segment(i)
	z := t.Zones[i]
	switch {
	case rack == "" && len(z.Racks) > 0:
		return nil, fmt.Errorf("zone %s has racks %v: the node's rack must be given", z.ID(), z.Racks)
	case rack == "":
	case !slices.Contains(z.Racks, rack):
		return nil, fmt.Errorf("rack %q is not one of zone %s's racks %v", rack, z.ID(), z.Racks)
	default:
		seg[t.Keys.Rack] = rack
	}
	if t.Keys.NodeZone != "" {
		seg[t.Keys.NodeZone] = z.Name
	}
	if t.Keys.NodeOS != "" {
		seg[t.Keys.NodeOS] = NodeOSValue
	}
	return seg, nil
}

// FindZone resolves "region/zone", or a zone name that is unique across
// regions, to a zone index.
func (t *Topology) FindZone(name string) (int, error) {
	if i, ok := t.byID[name]; ok {
		return i, nil
	}
	found := -1
	for i, z := range t.Zones {
		if z.Name != name {
			continue
		}
		if found >= 0 {
			return -1, fmt.Errorf("zone %q exists in several regions: name it as region/zone", name)
		}
		found = i
	}
	if found < 0 {
		return -1, fmt.Errorf("zone %q is not in the topology", name)
	}
	return found, nil
}

// FindSegment resolves a node's labels (or any segment naming a region,
// a zone and optionally a rack) to the zone index and rack. Unlike
// Select it reads the zone key also under keys.omitZone: a node still
// stands in one zone, which the driver only does not report.
func (t *Topology) FindSegment(labels map[string]string) (int, string, error) {
	if err := t.checkSegment(labels); err != nil {
		return -1, "", err
	}
	var zones []int
	for i := range t.Zones {
		if t.locates(labels, i) {
			zones = append(zones, i)
		}
	}
	if len(zones) == 0 {
		return -1, "", fmt.Errorf("segment %s matches no zone of this driver", FormatSegment(labels))
	}
	if len(zones) != 1 {
		return -1, "", fmt.Errorf("labels %s select %d zones; a node must carry %s of exactly one zone",
			FormatSegment(labels), len(zones), t.zoneKeys())
	}
	return zones[0], labels[t.Keys.Rack], nil
}

// zoneKeys names the keys that place a zone, for messages.
func (t *Topology) zoneKeys() string {
	if t.Keys.OmitZone {
		return t.Keys.Region
	}
	if t.Keys.OmitRegion {
		return t.Keys.Zone
	}
	return t.Keys.Region + " and " + t.Keys.Zone
}

// ErrUnknownTopology marks a well-formed requirement whose requisite
// names no zone of this driver: every segment has the driver's keys and
// valid values, yet none selects a zone, as a misspelt zone in a
// StorageClass or VolumeSnapshotClass does. The CSI spec lets a CO
// specify only topology the plugin supports (CreateSnapshotRequest
// accessibility_requirements: "COs SHALL only specify topological
// accessibility information supported by the SP"), so such a field has an
// invalid value; see the driver README's Errors section.
var ErrUnknownTopology = errors.New("names no zone of this driver")

// maxZonesNamed bounds the zones an ErrUnknownTopology message lists, so
// that a large world does not flood the CO's events.
const maxZonesNamed = 10

// Select validates a segment and returns the zones it selects, in
// topology order. Keys the driver does not know, malformed keys or values,
// and segments that select nothing are errors: Select serves callers that
// must name a place (a node's labels, GetCapacity's accessible_topology).
// Requirements are looser; see Candidates.
func (t *Topology) Select(seg map[string]string) ([]int, error) {
	if err := t.checkSegment(seg); err != nil {
		return nil, err
	}
	out := t.selectValid(seg)
	if len(out) == 0 {
		return nil, fmt.Errorf("segment %s matches no zone of this driver", FormatSegment(seg))
	}
	return out, nil
}

// checkSegment validates a segment's keys and values, not whether it
// names a zone.
func (t *Topology) checkSegment(seg map[string]string) error {
	if len(seg) == 0 {
		return fmt.Errorf("empty topology segment")
	}
	for k, v := range seg {
		if err := t.checkPair(k, v); err != nil {
			return err
		}
	}
	return nil
}

// selectValid returns the zones a checked segment selects, possibly none.
func (t *Topology) selectValid(seg map[string]string) []int {
	var out []int
	for i := range t.Zones {
		if t.selects(seg, i) {
			out = append(out, i)
		}
	}
	return out
}

func (t *Topology) checkPair(k, v string) error {
	if !t.knownKey(k) {
		return fmt.Errorf("unknown topology key %q: this driver uses %s and %s%s", k, t.zoneKeys(), t.Keys.Rack, t.nodeKeys())
	}
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("topology key %q: %s", k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 || v == "" {
		return fmt.Errorf("topology value %q of key %q is not a valid label value", v, k)
	}
	return nil
}

// knownKey: the keys the driver reports, in a node's segment or a
// volume's; a node-only key reported by NodeGetInfo is topology the CO
// may send back (CreateVolumeRequest.accessibility_requirements).
func (t *Topology) knownKey(k string) bool {
	return k != "" && (k == t.Keys.Region || k == t.Keys.Zone || k == t.Keys.Rack || k == t.Keys.NodeZone || k == t.Keys.NodeOS)
}

// nodeKeys names the node-only keys for messages, or "".
func (t *Topology) nodeKeys() string {
	var keys []string
	for _, k := range []string{t.Keys.NodeZone, t.Keys.NodeOS} {
		if k != "" {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	return ", and on nodes " + strings.Join(keys, " and ")
}

// selects reports whether segment seg covers zone i.
func (t *Topology) selects(seg map[string]string, i int) bool {
	for k, v := range seg {
		if !t.pairSelects(k, v, t.Zones[i]) {
			return false
		}
	}
	return true
}

// locates reports whether a node's labels seg place it in zone i: as
// selects, but reading the zone key under keys.omitZone (FindSegment).
func (t *Topology) locates(seg map[string]string, i int) bool {
	for k, v := range seg {
		if !t.pairLocates(k, v, t.Zones[i]) {
			return false
		}
	}
	return true
}

// pairSelects reports whether one key and value of a requested segment
// agree with zone z. Under keys.omitZone the driver reports no zone, so
// a segment naming one names no topology of this driver.
func (t *Topology) pairSelects(k, v string, z ZoneInfo) bool {
	if k == t.Keys.Zone && t.Keys.OmitZone {
		return false
	}
	return t.pairLocates(k, v, z)
}

// pairLocates reports whether one key and value agree with where zone z
// is, the zone key included.
func (t *Topology) pairLocates(k, v string, z ZoneInfo) bool {
	switch {
	case k == t.Keys.Region:
		// Under keys.omitRegion the driver reports no region, so a
		// segment naming one names no topology of this driver.
		return !t.Keys.OmitRegion && v == z.Region
	case k == t.Keys.Zone:
		return v == z.Name
	case k == t.Keys.Rack:
		return slices.Contains(z.Racks, v)
	case k != "" && k == t.Keys.NodeZone:
		return v == z.Name
	case k != "" && k == t.Keys.NodeOS:
		// Every node of the driver runs it; any other value names no
		// node of this driver.
		return v == NodeOSValue
	}
	return false
}

// Covers reports whether any of segs covers zone i.
func (t *Topology) Covers(segs []*csi.Topology, i int) bool {
	for _, s := range segs {
		if t.selects(s.GetSegments(), i) {
			return true
		}
	}
	return false
}

// Candidates turns a TopologyRequirement into the zones a new object may
// be placed in, best first (CSI spec, CreateVolumeRequest
// accessibility_requirements): zones selected by preferred segments in
// their order, restricted to requisite when requisite is given, then the
// remaining requisite zones. A nil result with a nil error means the
// request constrains nothing.
//
// Every segment must be well-formed, but one that selects no zone is
// skipped: the external-provisioner sends the cross product of a
// StorageClass's allowed values, so {region-2, zone-a} appears beside
// {region-1, zone-a}. A preferred segment is only a hint; a requisite
// of which no segment selects a zone is an error wrapping
// ErrUnknownTopology that names those segments and the driver's zones.
func (t *Topology) Candidates(req *csi.TopologyRequirement) ([]int, error) {
	if err := t.checkSegments("requisite", req.GetRequisite()); err != nil {
		return nil, err
	}
	if err := t.checkSegments("preferred", req.GetPreferred()); err != nil {
		return nil, err
	}
	if len(req.GetRequisite()) == 0 && len(req.GetPreferred()) == 0 {
		return nil, nil
	}
	requisite := t.selectAll(req.GetRequisite())
	if len(req.GetRequisite()) > 0 && len(requisite) == 0 {
		return nil, fmt.Errorf("requisite %s %w; its zones: %s", FormatSegments(req.GetRequisite()), ErrUnknownTopology, t.zoneList())
	}
	allowed := func(int) bool { return true }
	if len(req.GetRequisite()) > 0 {
		in := map[int]bool{}
		for _, i := range requisite {
			in[i] = true
		}
		allowed = func(i int) bool { return in[i] }
	}
	var out []int
	seen := map[int]bool{}
	add := func(i int) {
		if allowed(i) && !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	for _, i := range t.selectAll(req.GetPreferred()) {
		add(i)
	}
	for _, i := range requisite {
		add(i)
	}
	if len(req.GetRequisite()) == 0 {
		for i := range t.Zones {
			add(i)
		}
	}
	return out, nil
}

// zoneList names the first maxZonesNamed zones and how many there are.
func (t *Topology) zoneList() string {
	names := make([]string, 0, maxZonesNamed)
	for _, z := range t.Zones[:min(len(t.Zones), maxZonesNamed)] {
		names = append(names, z.ID())
	}
	if more := len(t.Zones) - len(names); more > 0 {
		return fmt.Sprintf("%s and %d more", strings.Join(names, " "), more)
	}
	return strings.Join(names, " ")
}

// checkSegments bounds and validates the segments of one field.
func (t *Topology) checkSegments(field string, segs []*csi.Topology) error {
	if len(segs) > MaxSegmentsPerRequirement {
		return fmt.Errorf("%s has %d segments, more than the %d this driver accepts", field, len(segs), MaxSegmentsPerRequirement)
	}
	for n, s := range segs {
		if err := t.checkSegment(s.GetSegments()); err != nil {
			return fmt.Errorf("%s[%d]: %w", field, n, err)
		}
	}
	return nil
}

// selectAll selects the zones of checked segments, in segment order.
func (t *Topology) selectAll(segs []*csi.Topology) []int {
	var out []int
	for _, s := range segs {
		out = append(out, t.selectValid(s.GetSegments())...)
	}
	return out
}

// FormatSegment renders a segment deterministically for messages:
// {key=value,...} in key order.
func FormatSegment(seg map[string]string) string {
	keys := slices.Sorted(maps.Keys(seg))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + seg[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// FormatSegments renders CSI segments for messages.
func FormatSegments(segs []*csi.Topology) string {
	parts := make([]string, len(segs))
	for i, s := range segs {
		parts[i] = FormatSegment(s.GetSegments())
	}
	return "[" + strings.Join(parts, " ") + "]"
}
