package world_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/zonepath/zonepath/driver/world"
)

const (
	kR = world.DefaultRegionKey
	kZ = world.DefaultZoneKey
	kK = world.DefaultRackKey
)

// worldDoc is the fixed topology of the package's tests: the segment
// tests, FuzzCandidates and the parse errors of node entries.
// Zone indexes: 0 east/a (racks r1 r2), 1 east/b, 2 east/c, 3 west/a (rack r3), 4 west/d.
const worldDoc = `
regions:
- name: east
  zones:
  - name: a
    racks: [r1, r2]
  - name: b
  - name: c
- name: west
  zones:
  - name: a
    racks: [r3]
  - name: d
`

func testWorld(t testing.TB) *world.Topology {
	t.Helper()
	return mustParse(t, worldDoc)
}

// seg builds a segment from alternating key/value strings.
func seg(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func topos(segs ...map[string]string) []*csi.Topology {
	out := make([]*csi.Topology, len(segs))
	for i, s := range segs {
		out[i] = &csi.Topology{Segments: s}
	}
	return out
}

func TestSegment(t *testing.T) {
	topo := testWorld(t)
	tests := []struct {
		zone int
		want map[string]string
	}{
		{0, seg(kR, "east", kZ, "a")},
		{2, seg(kR, "east", kZ, "c")},
		{3, seg(kR, "west", kZ, "a")},
		{4, seg(kR, "west", kZ, "d")},
	}
	for _, tc := range tests {
		if got := topo.Segment(tc.zone); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Segment(%d) = %v, want %v", tc.zone, got, tc.want)
		}
		// A zone's own segment selects exactly that zone.
		if got, err := topo.Select(topo.Segment(tc.zone)); err != nil || !reflect.DeepEqual(got, []int{tc.zone}) {
			t.Errorf("Select(Segment(%d)) = %v, %v; want [%d]", tc.zone, got, err, tc.zone)
		}
	}
	if got, want := topo.RegionSegment("west"), seg(kR, "west"); !reflect.DeepEqual(got, want) {
		t.Errorf("RegionSegment(west) = %v, want %v", got, want)
	}
	// Segment returns a fresh map: changing it must not affect the next call.
	s := topo.Segment(1)
	s[kK] = "r1"
	if got := topo.Segment(1); len(got) != 2 {
		t.Errorf("Segment(1) after mutating a previous result = %v", got)
	}
}

func TestSelect(t *testing.T) {
	topo := testWorld(t)
	tests := []struct {
		name    string
		seg     map[string]string
		want    []int
		wantErr string
	}{
		{"region east", seg(kR, "east"), []int{0, 1, 2}, ""},
		{"region west", seg(kR, "west"), []int{3, 4}, ""},
		{"zone name in both regions", seg(kZ, "a"), []int{0, 3}, ""},
		{"zone name unique", seg(kZ, "d"), []int{4}, ""},
		{"region and zone", seg(kR, "west", kZ, "a"), []int{3}, ""},
		{"region and zone east", seg(kR, "east", kZ, "a"), []int{0}, ""},
		{"rack only", seg(kK, "r1"), []int{0}, ""},
		{"rack of west", seg(kK, "r3"), []int{3}, ""},
		{"region zone rack", seg(kR, "east", kZ, "a", kK, "r2"), []int{0}, ""},
		{"region and rack of other region", seg(kR, "east", kK, "r3"), nil,
			`segment {topology.kubernetes.io/region=east,zonepath.csi.dev/rack=r3} matches no zone of this driver`},
		{"unknown region", seg(kR, "north"), nil, `segment {topology.kubernetes.io/region=north} matches no zone of this driver`},
		{"zone in wrong region", seg(kR, "west", kZ, "b"), nil, "matches no zone"},
		{"rack on a zone without racks", seg(kR, "east", kZ, "b", kK, "r1"), nil, "matches no zone"},
		{"unknown key", seg(kR, "east", "example.com/foo", "bar"), nil, `unknown topology key "example.com/foo"`},
		{"unknown key alone", seg("zone", "a"), nil, `unknown topology key "zone"`},
		{"invalid value", seg(kR, "east!"), nil, `topology value "east!" of key "topology.kubernetes.io/region" is not a valid label value`},
		{"value too long", seg(kZ, strings.Repeat("a", 64)), nil, "is not a valid label value"},
		{"empty value", seg(kR, ""), nil, `topology value "" of key "topology.kubernetes.io/region" is not a valid label value`},
		{"empty segment", seg(), nil, "empty topology segment"},
		{"nil segment", nil, nil, "empty topology segment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := topo.Select(tc.seg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Select(%v) = %v, %v; want error containing %q", tc.seg, got, err, tc.wantErr)
				}
				if got != nil {
					t.Errorf("Select(%v) returned zones %v with an error", tc.seg, got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Select(%v) = %v, %v; want %v", tc.seg, got, err, tc.want)
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	topo := testWorld(t)
	east := seg(kR, "east")
	west := seg(kR, "west")
	eastA := seg(kR, "east", kZ, "a")
	eastB := seg(kR, "east", kZ, "b")
	eastC := seg(kR, "east", kZ, "c")
	westA := seg(kR, "west", kZ, "a")
	westD := seg(kR, "west", kZ, "d")

	many := func(n int) []*csi.Topology {
		out := make([]*csi.Topology, n)
		for i := range out {
			out[i] = &csi.Topology{Segments: seg(kR, "east", kZ, "b")}
		}
		return out
	}

	tests := []struct {
		name    string
		req     *csi.TopologyRequirement
		want    []int
		wantErr []string
		unknown bool // wantErr is world.ErrUnknownTopology: well-formed, names no zone
	}{
		{name: "nil requirement", req: nil, want: nil},
		{name: "empty requirement", req: &csi.TopologyRequirement{}, want: nil},
		{name: "empty lists", req: &csi.TopologyRequirement{Requisite: []*csi.Topology{}, Preferred: []*csi.Topology{}}, want: nil},
		{name: "requisite order kept", req: &csi.TopologyRequirement{Requisite: topos(westD, eastB)}, want: []int{4, 1}},
		{name: "requisite region then zone", req: &csi.TopologyRequirement{Requisite: topos(west, eastB)}, want: []int{3, 4, 1}},
		{name: "requisite duplicates removed",
			req:  &csi.TopologyRequirement{Requisite: topos(eastA, seg(kZ, "a"), east, eastA)},
			want: []int{0, 3, 1, 2}},
		{name: "preferred inside requisite first",
			req:  &csi.TopologyRequirement{Requisite: topos(east), Preferred: topos(eastC)},
			want: []int{2, 0, 1}},
		{name: "preferred outside requisite dropped",
			req:  &csi.TopologyRequirement{Requisite: topos(east), Preferred: topos(westA, eastB)},
			want: []int{1, 0, 2}},
		{name: "preferred entirely outside requisite",
			req:  &csi.TopologyRequirement{Requisite: topos(eastA), Preferred: topos(westD)},
			want: []int{0}},
		{name: "preferred order over requisite order",
			req:  &csi.TopologyRequirement{Requisite: topos(eastA, eastB, westD), Preferred: topos(westD, eastB)},
			want: []int{4, 1, 0}},
		{name: "preferred duplicates removed",
			req:  &csi.TopologyRequirement{Requisite: topos(eastB, eastA), Preferred: topos(eastB, eastB, east)},
			want: []int{1, 0}},
		{name: "preferred only then every other zone",
			req:  &csi.TopologyRequirement{Preferred: topos(westD)},
			want: []int{4, 0, 1, 2, 3}},
		{name: "preferred region only",
			req:  &csi.TopologyRequirement{Preferred: topos(west)},
			want: []int{3, 4, 0, 1, 2}},
		{name: "preferred rack",
			req:  &csi.TopologyRequirement{Preferred: topos(seg(kK, "r3"), eastC)},
			want: []int{3, 2, 0, 1, 4}},
		{name: "1024 segments accepted", req: &csi.TopologyRequirement{Requisite: many(1024), Preferred: many(1024)}, want: []int{1}},
		{name: "1025 requisite segments", req: &csi.TopologyRequirement{Requisite: many(1025)},
			wantErr: []string{"requisite has 1025 segments, more than the 1024 this driver accepts"}},
		{name: "1025 preferred segments", req: &csi.TopologyRequirement{Requisite: topos(east), Preferred: many(1025)},
			wantErr: []string{"preferred has 1025 segments, more than the 1024 this driver accepts"}},
		{name: "invalid second requisite",
			req:     &csi.TopologyRequirement{Requisite: topos(eastA, seg("example.com/foo", "x"))},
			wantErr: []string{"requisite[1]: ", `unknown topology key "example.com/foo"`}},
		{name: "empty requisite segment",
			req:     &csi.TopologyRequirement{Requisite: topos(seg())},
			wantErr: []string{"requisite[0]: empty topology segment"}},
		{name: "nil topology in requisite",
			req:     &csi.TopologyRequirement{Requisite: []*csi.Topology{nil}},
			wantErr: []string{"requisite[0]: empty topology segment"}},
		// Well-formed segments that name no zone are skipped (the
		// external-provisioner's cross product of allowed values makes
		// them); only a requisite left with no zone at all fails.
		{name: "preferred naming no zone ignored",
			req:  &csi.TopologyRequirement{Requisite: topos(east), Preferred: topos(seg(kR, "nowhere"), eastC)},
			want: []int{2, 0, 1}},
		{name: "preferred only, naming no zone: every zone",
			req:  &csi.TopologyRequirement{Preferred: topos(seg(kR, "west", kZ, "b"))},
			want: []int{0, 1, 2, 3, 4}},
		{name: "requisite segments naming no zone skipped",
			req:  &csi.TopologyRequirement{Requisite: topos(seg(kR, "east", kZ, "d"), westD, seg(kR, "west", kZ, "b"), eastB)},
			want: []int{4, 1}},
		{name: "cross product of two regions' zones",
			req: &csi.TopologyRequirement{
				Requisite: topos(seg(kR, "east", kZ, "b"), seg(kR, "east", kZ, "d"), seg(kR, "west", kZ, "b"), seg(kR, "west", kZ, "d")),
				Preferred: topos(seg(kR, "west", kZ, "b"), seg(kR, "west", kZ, "d"), seg(kR, "east", kZ, "b"), seg(kR, "east", kZ, "d"))},
			want: []int{4, 1}},
		{name: "rack of another zone skipped",
			req:  &csi.TopologyRequirement{Requisite: topos(seg(kR, "east", kZ, "b", kK, "r1"), seg(kK, "r3"))},
			want: []int{3}},
		{name: "requisite naming no zone at all",
			req:     &csi.TopologyRequirement{Requisite: topos(seg(kR, "west", kZ, "b"), seg(kR, "north")), Preferred: topos(eastA)},
			wantErr: []string{"requisite [{topology.kubernetes.io/region=west,topology.kubernetes.io/zone=b} {topology.kubernetes.io/region=north}] names no zone of this driver; its zones: east/a east/b east/c west/a west/d"},
			unknown: true},
		{name: "malformed segment after one naming no zone",
			req:     &csi.TopologyRequirement{Requisite: topos(seg(kR, "north"), eastA), Preferred: topos(seg(kR, "north"), seg(kZ, "B!"))},
			wantErr: []string{"preferred[1]: ", `topology value "B!"`}},
		{name: "unknown key in a requisite that names no zone",
			req:     &csi.TopologyRequirement{Requisite: topos(seg(kR, "north"), seg(kR, "east", "example.com/foo", "x"))},
			wantErr: []string{"requisite[1]: ", `unknown topology key "example.com/foo"`}},
		{name: "invalid preferred value without requisite",
			req:     &csi.TopologyRequirement{Preferred: topos(eastA, eastB, seg(kZ, "B!"))},
			wantErr: []string{"preferred[2]: ", `topology value "B!"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := topo.Candidates(tc.req)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Candidates = %v, nil; want error containing %q", got, tc.wantErr)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				if got != nil {
					t.Errorf("Candidates returned %v with an error", got)
				}
				if errors.Is(err, world.ErrUnknownTopology) != tc.unknown {
					t.Errorf("errors.Is(%q, ErrUnknownTopology) = %t, want %t", err, !tc.unknown, tc.unknown)
				}
				return
			}
			if err != nil {
				t.Fatalf("Candidates: unexpected error %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Candidates = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFindZone(t *testing.T) {
	topo := testWorld(t)
	tests := []struct {
		name    string
		want    int
		wantErr string
	}{
		{"east/a", 0, ""},
		{"east/c", 2, ""},
		{"west/a", 3, ""},
		{"west/d", 4, ""},
		{"b", 1, ""},
		{"d", 4, ""},
		{"a", -1, `zone "a" exists in several regions: name it as region/zone`},
		{"west/b", -1, `zone "west/b" is not in the topology`},
		{"nope", -1, `zone "nope" is not in the topology`},
		{"east", -1, `zone "east" is not in the topology`},
		{"", -1, `zone "" is not in the topology`},
	}
	for _, tc := range tests {
		got, err := topo.FindZone(tc.name)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("FindZone(%q) = %d, %v; want error %q", tc.name, got, err, tc.wantErr)
			}
			if got != -1 {
				t.Errorf("FindZone(%q) index = %d with error, want -1", tc.name, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("FindZone(%q) = %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

func TestNodeSegment(t *testing.T) {
	topo := testWorld(t)
	tests := []struct {
		zone    int
		rack    string
		want    map[string]string
		wantErr string
	}{
		{0, "r1", seg(kR, "east", kZ, "a", kK, "r1"), ""},
		{0, "r2", seg(kR, "east", kZ, "a", kK, "r2"), ""},
		{3, "r3", seg(kR, "west", kZ, "a", kK, "r3"), ""},
		{1, "", seg(kR, "east", kZ, "b"), ""},
		{4, "", seg(kR, "west", kZ, "d"), ""},
		{0, "", nil, "zone east/a has racks [r1 r2]: the node's rack must be given"},
		{0, "r3", nil, `rack "r3" is not one of zone east/a's racks [r1 r2]`},
		{3, "r1", nil, `rack "r1" is not one of zone west/a's racks [r3]`},
		{1, "r1", nil, `rack "r1" is not one of zone east/b's racks []`},
	}
	for _, tc := range tests {
		got, err := topo.NodeSegment(tc.zone, tc.rack)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || got != nil {
				t.Errorf("NodeSegment(%d, %q) = %v, %v; want nil, error %q", tc.zone, tc.rack, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("NodeSegment(%d, %q) = %v, %v; want %v", tc.zone, tc.rack, got, err, tc.want)
		}
	}
	// Without racks anywhere, node segments carry no rack key.
	flat := mustParse(t, "regions:\n- name: r\n  zones: [{name: z}]\n")
	if got, err := flat.NodeSegment(0, ""); err != nil || !reflect.DeepEqual(got, seg(kR, "r", kZ, "z")) {
		t.Errorf("flat NodeSegment(0, \"\") = %v, %v", got, err)
	}
}

func TestFindSegment(t *testing.T) {
	topo := testWorld(t)
	tests := []struct {
		name     string
		labels   map[string]string
		wantZone int
		wantRack string
		wantErr  string
	}{
		{"region zone rack", seg(kR, "east", kZ, "a", kK, "r2"), 0, "r2", ""},
		{"region zone", seg(kR, "east", kZ, "b"), 1, "", ""},
		{"west zone with rack", seg(kR, "west", kZ, "a", kK, "r3"), 3, "r3", ""},
		{"region only", seg(kR, "east"), -1, "",
			"labels {topology.kubernetes.io/region=east} select 3 zones; a node must carry topology.kubernetes.io/region and topology.kubernetes.io/zone of exactly one zone"},
		{"ambiguous zone name", seg(kZ, "a"), -1, "", "select 2 zones"},
		{"rack of another zone", seg(kR, "west", kZ, "a", kK, "r1"), -1, "", "matches no zone"},
		{"unknown region", seg(kR, "north", kZ, "a"), -1, "", "matches no zone"},
		{"unknown key", seg(kR, "east", kZ, "b", "kubernetes.io/hostname", "n1"), -1, "", `unknown topology key "kubernetes.io/hostname"`},
		{"no labels", seg(), -1, "", "empty topology segment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			zone, rack, err := topo.FindSegment(tc.labels)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("FindSegment(%v) = %d, %q, %v; want error %q", tc.labels, zone, rack, err, tc.wantErr)
				}
				if zone != -1 || rack != "" {
					t.Errorf("FindSegment(%v) = %d, %q with an error; want -1, \"\"", tc.labels, zone, rack)
				}
				return
			}
			if err != nil || zone != tc.wantZone || rack != tc.wantRack {
				t.Errorf("FindSegment(%v) = %d, %q, %v; want %d, %q", tc.labels, zone, rack, err, tc.wantZone, tc.wantRack)
			}
		})
	}
}

func TestCovers(t *testing.T) {
	topo := testWorld(t)
	tests := []struct {
		name string
		segs []*csi.Topology
		want []bool // per zone index 0..4
	}{
		{"nil", nil, []bool{false, false, false, false, false}},
		{"region west", topos(seg(kR, "west")), []bool{false, false, false, true, true}},
		{"zone and rack", topos(seg(kR, "east", kZ, "b"), seg(kK, "r3")), []bool{false, true, false, true, false}},
		{"zone name across regions", topos(seg(kZ, "a")), []bool{true, false, false, true, false}},
		{"rack of a zone", topos(seg(kR, "east", kZ, "a", kK, "r1")), []bool{true, false, false, false, false}},
		{"unknown key covers nothing", topos(seg("example.com/x", "east")), []bool{false, false, false, false, false}},
		{"mismatch in one pair", topos(seg(kR, "east", kZ, "d")), []bool{false, false, false, false, false}},
		{"every region", topos(seg(kR, "east"), seg(kR, "west")), []bool{true, true, true, true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.want {
				if got := topo.Covers(tc.segs, i); got != want {
					t.Errorf("Covers(%s, %d) = %v, want %v", world.FormatSegments(tc.segs), i, got, want)
				}
			}
		})
	}
}

func TestFormatSegments(t *testing.T) {
	tests := []struct {
		segs []*csi.Topology
		want string
	}{
		{nil, "[]"},
		{topos(seg("b", "2", "a", "1")), "[{a=1,b=2}]"},
		{topos(seg(kZ, "a", kR, "east"), seg(kR, "west")),
			"[{topology.kubernetes.io/region=east,topology.kubernetes.io/zone=a} {topology.kubernetes.io/region=west}]"},
		{[]*csi.Topology{nil, {}}, "[{} {}]"},
	}
	for i, tc := range tests {
		// Map order is random: repeat to catch non-deterministic output.
		for n := 0; n < 20; n++ {
			if got := world.FormatSegments(tc.segs); got != tc.want {
				t.Fatalf("case %d: FormatSegments = %q, want %q", i, got, tc.want)
			}
		}
	}
}

func TestCandidatesLargeWorld(t *testing.T) {
	// Ten regions of ten zones; requisite = two regions, preferred = the
	// last zone of each requisite region and one zone outside requisite.
	var b strings.Builder
	b.WriteString("regions:\n")
	for r := 0; r < 10; r++ {
		fmt.Fprintf(&b, "- name: r%d\n  zones:\n", r)
		for z := 0; z < 10; z++ {
			fmt.Fprintf(&b, "  - name: z%d\n", z)
		}
	}
	topo := mustParse(t, b.String())
	req := &csi.TopologyRequirement{
		Requisite: topos(seg(kR, "r7"), seg(kR, "r2")),
		Preferred: topos(seg(kR, "r2", kZ, "z9"), seg(kR, "r5", kZ, "z0"), seg(kR, "r7", kZ, "z9")),
	}
	got, err := topo.Candidates(req)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{29, 79}
	for z := 0; z < 10; z++ {
		if z != 9 {
			want = append(want, 70+z)
		}
	}
	for z := 0; z < 9; z++ {
		want = append(want, 20+z)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Candidates = %v\nwant %v", got, want)
	}
	// A misspelt zone's message lists a bounded number of the zones.
	_, err = topo.Candidates(&csi.TopologyRequirement{Requisite: topos(seg(kR, "r1", kZ, "z10"))})
	const wantMsg = "requisite [{topology.kubernetes.io/region=r1,topology.kubernetes.io/zone=z10}] names no zone of this driver; " +
		"its zones: r0/z0 r0/z1 r0/z2 r0/z3 r0/z4 r0/z5 r0/z6 r0/z7 r0/z8 r0/z9 and 90 more"
	if !errors.Is(err, world.ErrUnknownTopology) || err.Error() != wantMsg {
		t.Errorf("Candidates with a misspelt zone: %v\nwant %s", err, wantMsg)
	}
}
