package topology_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/driver/topology"
)

func ptr[T any](v T) *T { return &v }

func mustParse(t testing.TB, doc string) *topology.Topology {
	t.Helper()
	topo, err := topology.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: unexpected error: %v\n%s", err, doc)
	}
	return topo
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseValid(t *testing.T) {
	topo, err := topology.Parse(readTestdata(t, "valid.yaml"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}

	wantKeys := topology.Keys{
		Region: topology.DefaultRegionKey,
		Zone:   topology.DefaultZoneKey,
		Rack:   "example.com/rack",
	}
	if topo.Keys != wantKeys {
		t.Errorf("Keys = %+v, want %+v", topo.Keys, wantKeys)
	}

	wantZones := []topology.ZoneInfo{
		{Region: "east", Name: "a", Racks: []string{"r1", "r2"}, CapacityBytes: 10 << 30, SnapshotQuota: 3},
		{Region: "east", Name: "b", CapacityBytes: -1, SnapshotQuota: -1},
		{Region: "west", Name: "a", CapacityBytes: 500 << 20, SnapshotQuota: 0},
		// "1.5" bytes is rounded up to a whole byte.
		{Region: "west", Name: "c", CapacityBytes: 2, SnapshotQuota: -1},
	}
	if !reflect.DeepEqual(topo.Zones, wantZones) {
		t.Errorf("Zones =\n%+v\nwant\n%+v", topo.Zones, wantZones)
	}

	for i, id := range []string{"east/a", "east/b", "west/a", "west/c"} {
		if got := topo.Zones[i].ID(); got != id {
			t.Errorf("Zones[%d].ID() = %q, want %q", i, got, id)
		}
		idx, ok := topo.Index(id)
		if !ok || idx != i {
			t.Errorf("Index(%q) = %d, %v; want %d, true", id, idx, ok, i)
		}
		z, ok := topo.Zone(id)
		if !ok || !reflect.DeepEqual(z, wantZones[i]) {
			t.Errorf("Zone(%q) = %+v, %v; want %+v, true", id, z, ok, wantZones[i])
		}
	}
	for _, id := range []string{"east", "a", "west/b", "", "east/a/r1"} {
		if idx, ok := topo.Index(id); ok {
			t.Errorf("Index(%q) = %d, true; want false", id, idx)
		}
		if z, ok := topo.Zone(id); ok {
			t.Errorf("Zone(%q) = %+v, true; want false", id, z)
		}
	}

	if got := topo.DefaultMaxVolumesPerNode(); got != 16 {
		t.Errorf("DefaultMaxVolumesPerNode() = %d, want 16", got)
	}
	if !topo.HasRacks() {
		t.Errorf("HasRacks() = false, want true")
	}

	nodes := []struct {
		id   string
		want topology.NodeInfo
	}{
		{"n1", topology.NodeInfo{ID: "n1", Zone: 0, Rack: "r1", MaxVolumesPerNode: 16}},
		{"n2", topology.NodeInfo{ID: "n2", Zone: 1, MaxVolumesPerNode: 4}},
		{"n3", topology.NodeInfo{ID: "n3", Zone: 2, MaxVolumesPerNode: 0}},
		{"n4", topology.NodeInfo{ID: "n4", Zone: 3, MaxVolumesPerNode: 16}},
	}
	for _, tc := range nodes {
		got, ok := topo.Node(tc.id)
		if !ok || got != tc.want {
			t.Errorf("Node(%q) = %+v, %v; want %+v, true", tc.id, got, ok, tc.want)
		}
	}
	if n, ok := topo.Node("n5"); ok {
		t.Errorf("Node(n5) = %+v, true; want false", n)
	}
}

func TestParseKeysOverride(t *testing.T) {
	topo := mustParse(t, `
keys:
  region: example.com/region
  zone: example.com/zone
  rack: example.com/rack
regions:
- name: r
  zones:
  - name: z
    racks: [k]
`)
	want := topology.Keys{Region: "example.com/region", Zone: "example.com/zone", Rack: "example.com/rack"}
	if topo.Keys != want {
		t.Fatalf("Keys = %+v, want %+v", topo.Keys, want)
	}
	seg, err := topo.NodeSegment(0, "k")
	if err != nil {
		t.Fatal(err)
	}
	wantSeg := map[string]string{"example.com/region": "r", "example.com/zone": "z", "example.com/rack": "k"}
	if !reflect.DeepEqual(seg, wantSeg) {
		t.Errorf("NodeSegment = %v, want %v", seg, wantSeg)
	}
	// The default keys are no longer accepted.
	if _, err := topo.Select(map[string]string{topology.DefaultRegionKey: "r"}); err == nil ||
		!strings.Contains(err.Error(), `unknown topology key "topology.kubernetes.io/region"`) {
		t.Errorf("Select with a default key: err = %v, want unknown topology key", err)
	}
	zones, err := topo.Select(map[string]string{"example.com/region": "r"})
	if err != nil || !reflect.DeepEqual(zones, []int{0}) {
		t.Errorf("Select with the override key = %v, %v; want [0], nil", zones, err)
	}
	if topo.DefaultMaxVolumesPerNode() != 0 {
		t.Errorf("DefaultMaxVolumesPerNode() = %d, want 0 when unset", topo.DefaultMaxVolumesPerNode())
	}
	if topo.HasRacks() != true {
		t.Errorf("HasRacks() = false, want true")
	}
}

func TestParseErrors(t *testing.T) {
	const twoRegions = `
regions:
- name: east
  zones:
  - name: a
    racks: [r1, r2]
  - name: b
- name: west
  zones:
  - name: a
`
	long := strings.Repeat("x", 64)
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error
	}{
		{"empty document", ``, []string{"regions: at least one region is required"}},
		{"no regions", `regions: []`, []string{"regions: at least one region is required"}},
		{"region without zones", "regions:\n- name: east\n", []string{`regions[0] (east): at least one zone is required`}},
		{"duplicate region", `
regions:
- name: east
  zones: [{name: a}]
- name: west
  zones: [{name: a}]
- name: east
  zones: [{name: b}]
`, []string{`regions[2]: duplicate region "east"`}},
		{"duplicate zone", `
regions:
- name: east
  zones: [{name: a}, {name: b}, {name: a}]
`, []string{`regions[0].zones[2]: duplicate zone "a"`}},
		{"upper-case region name", `
regions:
- name: East
  zones: [{name: a}]
`, []string{`regions[0].name: "East" must be a DNS-1123 label-like name of at most 63 characters`}},
		{"empty region name", `
regions:
- zones: [{name: a}]
`, []string{`regions[0].name: ""`}},
		{"bad zone name", `
regions:
- name: east
  zones: [{name: a}, {name: b_c}]
`, []string{`regions[0].zones[1].name: "b_c"`}},
		{"zone name ending in dash", `
regions:
- name: east
  zones: [{name: a-}]
`, []string{`regions[0].zones[0].name: "a-"`}},
		{"zone name too long", `
regions:
- name: east
  zones: [{name: ` + long + `}]
`, []string{`regions[0].zones[0].name: "` + long + `"`, "at most 63 characters"}},
		{"bad rack name", `
regions:
- name: east
  zones: [{name: a, racks: [r1, R2]}]
`, []string{`regions[0].zones[0].racks[1]: "R2"`}},
		{"bad capacity", `
regions:
- name: east
  zones: [{name: a}, {name: b, capacity: ten}]
`, []string{`regions[0].zones[1].capacity: "ten" is not a non-negative quantity`}},
		{"negative capacity", `
regions:
- name: east
  zones: [{name: a, capacity: -1Gi}]
`, []string{`regions[0].zones[0].capacity: "-1Gi" is not a non-negative quantity`}},
		{"negative snapshot quota", `
regions:
- name: east
  zones: [{name: a, snapshotQuota: -1}]
`, []string{`regions[0].zones[0].snapshotQuota: must not be negative, got -1`}},
		{"earlier error wins", `
regions:
- name: east
- name: west
  zones: [{name: a, snapshotQuota: -1}]
`, []string{`regions[0] (east): at least one zone is required`}},
		{"negative snapshot quota in second region", `
regions:
- name: east
  zones: [{name: a}]
- name: west
  zones: [{name: a, snapshotQuota: 2}, {name: b, snapshotQuota: -3}]
`, []string{`regions[1].zones[1].snapshotQuota: must not be negative, got -3`}},
		{"negative default maxVolumesPerNode", "maxVolumesPerNode: -1\n" + twoRegions,
			[]string{"maxVolumesPerNode: must not be negative, got -1"}},
		{"unknown top-level field", "foo: 1\n" + twoRegions, []string{`unknown field "foo"`}},
		{"unknown zone field", `
regions:
- name: east
  zones: [{name: a, capcity: 10Gi}]
`, []string{`unknown field "capcity"`}},
		{"unknown key field", "keys: {host: x}\n" + twoRegions, []string{`unknown field "host"`}},
		{"wrong type", `regions: 3`, []string{"regions"}},
		{"node with unknown zone", twoRegions + `
nodes:
- id: n1
  zone: east/b
- id: n2
  zone: north/a
`, []string{`nodes[1]: zone "north/a" is not in the topology`}},
		{"node with ambiguous zone name", twoRegions + `
nodes:
- id: n1
  zone: a
  rack: r1
`, []string{`nodes[0]: zone "a" exists in several regions`}},
		{"node rack not in zone", twoRegions + `
nodes:
- id: n1
  zone: east/a
  rack: r9
`, []string{`nodes[0]: rack "r9" is not one of zone east/a's racks [r1 r2]`}},
		{"node rack in zone without racks", twoRegions + `
nodes:
- id: n1
  zone: b
  rack: r1
`, []string{`nodes[0]: rack "r1" is not one of zone east/b's racks []`}},
		{"node without rack in racked zone", twoRegions + `
nodes:
- id: n1
  zone: east/b
- id: n2
  zone: east/a
`, []string{`nodes[1]: zone east/a has racks [r1 r2]: the node's rack must be given`}},
		{"node without id", twoRegions + `
nodes:
- zone: east/b
`, []string{`nodes[0]: id is required`}},
		{"node id too long", twoRegions + `
nodes:
- id: ` + strings.Repeat("n", 129) + `
  zone: east/b
`, []string{`nodes[0]: id is required, at most 128 characters`}},
		{"duplicate node", twoRegions + `
nodes:
- id: n1
  zone: east/b
- id: n2
  zone: west/a
- id: n1
  zone: west/a
`, []string{`nodes[2]: duplicate node "n1"`}},
		{"node negative maxVolumesPerNode", twoRegions + `
nodes:
- id: n1
  zone: east/b
  maxVolumesPerNode: -2
`, []string{`nodes[0]: maxVolumesPerNode must not be negative`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := topology.Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse succeeded with %d zones, want error containing %q", len(topo.Zones), tc.want)
			}
			if topo != nil {
				t.Errorf("Parse returned a non-nil topology with error %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseBoundaries(t *testing.T) {
	name63 := strings.Repeat("z", 63)
	tests := []struct {
		name     string
		doc      string
		capacity int64
		quota    int64
	}{
		{"63-character names", "regions:\n- name: " + name63 + "\n  zones: [{name: " + name63 + "}]\n", -1, -1},
		{"dotted name and zero capacity", "regions:\n- name: eu.west-1\n  zones: [{name: z.1, capacity: \"0\", snapshotQuota: 0}]\n", 0, 0},
		{"decimal SI capacity", "regions:\n- name: r\n  zones: [{name: z, capacity: 2G, snapshotQuota: 7}]\n", 2_000_000_000, 7},
		{"single character names", "regions:\n- name: r\n  zones: [{name: \"1\", capacity: 1Ki}]\n", 1024, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := mustParse(t, tc.doc)
			if len(topo.Zones) != 1 {
				t.Fatalf("got %d zones, want 1", len(topo.Zones))
			}
			z := topo.Zones[0]
			if z.CapacityBytes != tc.capacity || z.SnapshotQuota != tc.quota {
				t.Errorf("capacity, quota = %d, %d; want %d, %d", z.CapacityBytes, z.SnapshotQuota, tc.capacity, tc.quota)
			}
			if topo.HasRacks() {
				t.Errorf("HasRacks() = true for a topology without racks")
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join("testdata", "valid.yaml")
	topo, err := topology.Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	if len(topo.Zones) != 4 || topo.Zones[3].ID() != "west/c" {
		t.Errorf("Load(%s) zones = %+v", path, topo.Zones)
	}

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := topology.Load(missing); err == nil || !strings.Contains(err.Error(), "reading topology file") {
		t.Errorf("Load(missing) error = %v, want reading topology file", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("regions:\n- name: east\n  zones: [{name: a, snapshotQuota: -1}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = topology.Load(bad)
	if err == nil {
		t.Fatalf("Load(bad) succeeded")
	}
	for _, w := range []string{"topology file " + bad + ": ", "regions[0].zones[0].snapshotQuota"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Load(bad) error %q does not contain %q", err, w)
		}
	}
}

func TestDefault(t *testing.T) {
	topo := topology.Default()
	want := []topology.ZoneInfo{
		{Region: "region-1", Name: "zone-a", CapacityBytes: -1, SnapshotQuota: -1},
		{Region: "region-1", Name: "zone-b", CapacityBytes: -1, SnapshotQuota: -1},
		{Region: "region-1", Name: "zone-c", CapacityBytes: -1, SnapshotQuota: -1},
	}
	if !reflect.DeepEqual(topo.Zones, want) {
		t.Errorf("Default().Zones = %+v, want %+v", topo.Zones, want)
	}
	wantKeys := topology.Keys{Region: topology.DefaultRegionKey, Zone: topology.DefaultZoneKey, Rack: topology.DefaultRackKey}
	if topo.Keys != wantKeys {
		t.Errorf("Default().Keys = %+v, want %+v", topo.Keys, wantKeys)
	}
	if topo.HasRacks() || topo.DefaultMaxVolumesPerNode() != 0 {
		t.Errorf("Default(): HasRacks=%v DefaultMaxVolumesPerNode=%d, want false, 0", topo.HasRacks(), topo.DefaultMaxVolumesPerNode())
	}
	if _, ok := topo.Node("any"); ok {
		t.Errorf("Default().Node(any) found a node")
	}
}

func TestMaxVolumesPerNode(t *testing.T) {
	const regions = `
regions:
- name: east
  zones: [{name: a}]
`
	tests := []struct {
		name        string
		doc         string
		wantDefault int64
		node        string
		wantNode    int64
		wantFound   bool
	}{
		{"no default, no override", regions + "nodes: [{id: n1, zone: a}]\n", 0, "n1", 0, true},
		{"default inherited", "maxVolumesPerNode: 8\n" + regions + "nodes: [{id: n1, zone: a}]\n", 8, "n1", 8, true},
		{"override above default", "maxVolumesPerNode: 8\n" + regions + "nodes: [{id: n1, zone: a, maxVolumesPerNode: 20}]\n", 8, "n1", 20, true},
		{"override to zero", "maxVolumesPerNode: 8\n" + regions + "nodes: [{id: n1, zone: east/a, maxVolumesPerNode: 0}]\n", 8, "n1", 0, true},
		{"override without default", regions + "nodes: [{id: n1, zone: a, maxVolumesPerNode: 3}]\n", 0, "n1", 3, true},
		{"unknown node", "maxVolumesPerNode: 8\n" + regions + "nodes: [{id: n1, zone: a}]\n", 8, "n2", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo := mustParse(t, tc.doc)
			if got := topo.DefaultMaxVolumesPerNode(); got != tc.wantDefault {
				t.Errorf("DefaultMaxVolumesPerNode() = %d, want %d", got, tc.wantDefault)
			}
			n, ok := topo.Node(tc.node)
			if ok != tc.wantFound {
				t.Fatalf("Node(%q) found = %v, want %v", tc.node, ok, tc.wantFound)
			}
			if n.MaxVolumesPerNode != tc.wantNode {
				t.Errorf("Node(%q).MaxVolumesPerNode = %d, want %d", tc.node, n.MaxVolumesPerNode, tc.wantNode)
			}
		})
	}
}

// TestValidateFileStruct exercises File.Validate directly, as the plugin's
// own callers may build a File in code.
func TestValidateFileStruct(t *testing.T) {
	f := topology.File{
		MaxVolumesPerNode: 2,
		Regions: []topology.Region{
			{Name: "r1", Zones: []topology.Zone{{Name: "z1", Capacity: "1Mi", SnapshotQuota: ptr[int64](5), Racks: []string{"k1"}}}},
			{Name: "r2", Zones: []topology.Zone{{Name: "z1"}}},
		},
		Nodes: []topology.Node{{ID: "n", Zone: "r2/z1", MaxVolumesPerNode: ptr[int64](9)}},
	}
	topo, err := f.Validate()
	if err != nil {
		t.Fatal(err)
	}
	want := []topology.ZoneInfo{
		{Region: "r1", Name: "z1", Racks: []string{"k1"}, CapacityBytes: 1 << 20, SnapshotQuota: 5},
		{Region: "r2", Name: "z1", CapacityBytes: -1, SnapshotQuota: -1},
	}
	if !reflect.DeepEqual(topo.Zones, want) {
		t.Errorf("Zones = %+v, want %+v", topo.Zones, want)
	}
	if n, _ := topo.Node("n"); n != (topology.NodeInfo{ID: "n", Zone: 1, MaxVolumesPerNode: 9}) {
		t.Errorf("Node(n) = %+v", n)
	}
}
