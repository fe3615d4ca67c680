package world_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/driver/world"
)

func ptr[T any](v T) *T { return &v }

func mustParse(t testing.TB, doc string) *world.Topology {
	t.Helper()
	topo, err := world.Parse([]byte(doc))
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
	topo, err := world.Parse(readTestdata(t, "valid.yaml"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}

	wantKeys := world.Keys{
		Region: world.DefaultRegionKey,
		Zone:   world.DefaultZoneKey,
		Rack:   "example.com/rack",
	}
	if topo.Keys != wantKeys {
		t.Errorf("Keys = %+v, want %+v", topo.Keys, wantKeys)
	}

	wantZones := []world.ZoneInfo{
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
		want world.NodeInfo
	}{
		{"n1", world.NodeInfo{ID: "n1", Zone: 0, Rack: "r1", MaxVolumesPerNode: 16}},
		{"n2", world.NodeInfo{ID: "n2", Zone: 1, MaxVolumesPerNode: 4}},
		{"n3", world.NodeInfo{ID: "n3", Zone: 2, MaxVolumesPerNode: 0}},
		{"n4", world.NodeInfo{ID: "n4", Zone: 3, MaxVolumesPerNode: 16}},
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
	want := world.Keys{Region: "example.com/region", Zone: "example.com/zone", Rack: "example.com/rack"}
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
	if _, err := topo.Select(map[string]string{world.DefaultRegionKey: "r"}); err == nil ||
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
		{"negative default maxVolumesPerNode", "maxVolumesPerNode: -1\n" + worldDoc,
			[]string{"maxVolumesPerNode: must not be negative, got -1"}},
		{"unknown top-level field", "foo: 1\n" + worldDoc, []string{`unknown field "foo"`}},
		{"unknown zone field", `
regions:
- name: east
  zones: [{name: a, capcity: 10Gi}]
`, []string{`unknown field "capcity"`}},
		{"unknown key field", "keys: {host: x}\n" + worldDoc, []string{`unknown field "host"`}},
		{"wrong type", `regions: 3`, []string{"regions"}},
		{"node with unknown zone", worldDoc + `
nodes:
- id: n1
  zone: east/b
- id: n2
  zone: north/a
`, []string{`nodes[1]: zone "north/a" is not in the topology`}},
		{"node with ambiguous zone name", worldDoc + `
nodes:
- id: n1
  zone: a
  rack: r1
`, []string{`nodes[0]: zone "a" exists in several regions`}},
		{"node rack not in zone", worldDoc + `
nodes:
- id: n1
  zone: east/a
  rack: r9
`, []string{`nodes[0]: rack "r9" is not one of zone east/a's racks [r1 r2]`}},
		{"node rack in zone without racks", worldDoc + `
nodes:
- id: n1
  zone: b
  rack: r1
`, []string{`nodes[0]: rack "r1" is not one of zone east/b's racks []`}},
		{"node without rack in racked zone", worldDoc + `
nodes:
- id: n1
  zone: east/b
- id: n2
  zone: east/a
`, []string{`nodes[1]: zone east/a has racks [r1 r2]: the node's rack must be given`}},
		{"node without id", worldDoc + `
nodes:
- zone: east/b
`, []string{`nodes[0]: id is required`}},
		{"node id too long", worldDoc + `
nodes:
- id: ` + strings.Repeat("n", 129) + `
  zone: east/b
`, []string{`nodes[0]: id is required, at most 128 characters`}},
		{"duplicate node", worldDoc + `
nodes:
- id: n1
  zone: east/b
- id: n2
  zone: west/d
- id: n1
  zone: west/d
`, []string{`nodes[2]: duplicate node "n1"`}},
		{"node negative maxVolumesPerNode", worldDoc + `
nodes:
- id: n1
  zone: east/b
  maxVolumesPerNode: -2
`, []string{`nodes[0]: maxVolumesPerNode must not be negative`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := world.Parse([]byte(tc.doc))
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
	topo, err := world.Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	if len(topo.Zones) != 4 || topo.Zones[3].ID() != "west/c" {
		t.Errorf("Load(%s) zones = %+v", path, topo.Zones)
	}

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	if _, err := world.Load(missing); err == nil || !strings.Contains(err.Error(), "reading topology file") {
		t.Errorf("Load(missing) error = %v, want reading topology file", err)
	}

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("regions:\n- name: east\n  zones: [{name: a, snapshotQuota: -1}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = world.Load(bad)
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
	topo := world.Default()
	want := []world.ZoneInfo{
		{Region: "region-1", Name: "zone-a", CapacityBytes: -1, SnapshotQuota: -1},
		{Region: "region-1", Name: "zone-b", CapacityBytes: -1, SnapshotQuota: -1},
		{Region: "region-1", Name: "zone-c", CapacityBytes: -1, SnapshotQuota: -1},
	}
	if !reflect.DeepEqual(topo.Zones, want) {
		t.Errorf("Default().Zones = %+v, want %+v", topo.Zones, want)
	}
	wantKeys := world.Keys{Region: world.DefaultRegionKey, Zone: world.DefaultZoneKey, Rack: world.DefaultRackKey}
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
	f := world.File{
		MaxVolumesPerNode: 2,
		Regions: []world.Region{
			{Name: "r1", Zones: []world.Zone{{Name: "z1", Capacity: "1Mi", SnapshotQuota: ptr[int64](5), Racks: []string{"k1"}}}},
			{Name: "r2", Zones: []world.Zone{{Name: "z1"}}},
		},
		Nodes: []world.Node{{ID: "n", Zone: "r2/z1", MaxVolumesPerNode: ptr[int64](9)}},
	}
	topo, err := f.Validate()
	if err != nil {
		t.Fatal(err)
	}
	want := []world.ZoneInfo{
		{Region: "r1", Name: "z1", Racks: []string{"k1"}, CapacityBytes: 1 << 20, SnapshotQuota: 5},
		{Region: "r2", Name: "z1", CapacityBytes: -1, SnapshotQuota: -1},
	}
	if !reflect.DeepEqual(topo.Zones, want) {
		t.Errorf("Zones = %+v, want %+v", topo.Zones, want)
	}
	if n, _ := topo.Node("n"); n != (world.NodeInfo{ID: "n", Zone: 1, MaxVolumesPerNode: 9}) {
		t.Errorf("Node(n) = %+v", n)
	}
}

// TestParseCapacityLimits: a capacity must fit in an int64 of bytes;
// larger ones are rejected rather than wrapped or saturated.
func TestParseCapacityLimits(t *testing.T) {
	const maxInt64 = int64(1<<63 - 1)
	tests := []struct {
		capacity string
		want     int64  // when wantErr is ""
		wantErr  string // substring of the error
	}{
		{"9223372036854775807", maxInt64, ""},
		{"7Ei", 7 << 60, ""},
		{"8191Pi", 8191 << 50, ""},
		{"9.2E18", 9_200_000_000_000_000_000, ""},
		{"1.5", 2, ""}, // rounded up to a whole byte
		{"0.001", 1, ""},
		{"1e30", 0, `regions[0].zones[1].capacity: "1e30" is more bytes than fit in 64 bits`},
		{"9223372036854775808", 0, `regions[0].zones[1].capacity: "9223372036854775808" is more bytes than fit in 64 bits`},
		{"9223372036854775807.5", 0, `regions[0].zones[1].capacity: "9223372036854775807.5" is more bytes than fit in 64 bits`},
		{"8Ei", 0, `regions[0].zones[1].capacity: "8Ei" is more bytes than fit in 64 bits`},
		{"9Ei", 0, `regions[0].zones[1].capacity: "9Ei" is more bytes than fit in 64 bits`},
		{"9.3E", 0, `regions[0].zones[1].capacity: "9.3E" is more bytes than fit in 64 bits`},
		{"8192Pi", 0, `regions[0].zones[1].capacity: "8192Pi" is more bytes than fit in 64 bits`},
	}
	for _, tc := range tests {
		t.Run(tc.capacity, func(t *testing.T) {
			doc := "regions:\n- name: east\n  zones:\n  - name: a\n  - name: b\n    capacity: \"" + tc.capacity + "\"\n"
			topo, err := world.Parse([]byte(doc))
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse accepted capacity %q as %d bytes, want error containing %q", tc.capacity, topo.Zones[1].CapacityBytes, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Parse error %q does not contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse rejected capacity %q: %v", tc.capacity, err)
			}
			if got := topo.Zones[1].CapacityBytes; got != tc.want {
				t.Errorf("capacity %q = %d bytes, want %d", tc.capacity, got, tc.want)
			}
			// File.Validate, used by code building a File, agrees.
			f := world.File{Regions: []world.Region{{Name: "east", Zones: []world.Zone{{Name: "a"}, {Name: "b", Capacity: tc.capacity}}}}}
			if topo2, err := f.Validate(); err != nil || topo2.Zones[1].CapacityBytes != tc.want {
				t.Errorf("File.Validate with capacity %q = %v, %v; want %d bytes", tc.capacity, topo2, err, tc.want)
			}
		})
	}
}

// TestParseKeys: the three topology keys must be distinct, valid label
// keys; overrides are used for segments both ways.
func TestParseKeys(t *testing.T) {
	const regions = `
regions:
- name: east
  zones:
  - name: a
    racks: [r1]
  - name: b
nodes:
- id: n1
  zone: east/a
  rack: r1
`
	tests := []struct {
		name    string
		keys    string // the keys: block
		want    world.Keys
		wantErr string
	}{
		{"defaults", ``,
			world.Keys{Region: world.DefaultRegionKey, Zone: world.DefaultZoneKey, Rack: world.DefaultRackKey}, ""},
		{"all overridden", "keys: {region: example.com/region, zone: example.com/zone, rack: example.com/rack}",
			world.Keys{Region: "example.com/region", Zone: "example.com/zone", Rack: "example.com/rack"}, ""},
		{"unprefixed keys", "keys: {region: region, zone: zone, rack: rack}",
			world.Keys{Region: "region", Zone: "zone", Rack: "rack"}, ""},
		{"zone takes the default rack key while rack is overridden",
			"keys: {zone: " + world.DefaultRackKey + ", rack: example.com/rack}",
			world.Keys{Region: world.DefaultRegionKey, Zone: world.DefaultRackKey, Rack: "example.com/rack"}, ""},
		{"region and rack swap defaults",
			"keys: {region: " + world.DefaultRackKey + ", rack: " + world.DefaultRegionKey + "}",
			world.Keys{Region: world.DefaultRackKey, Zone: world.DefaultZoneKey, Rack: world.DefaultRegionKey}, ""},

		{"region equals zone", "keys: {region: example.com/z, zone: example.com/z}",
			world.Keys{}, `keys.zone: "example.com/z" is already keys.region`},
		{"all three equal", "keys: {region: example.com/k, zone: example.com/k, rack: example.com/k}",
			world.Keys{}, `keys.zone: "example.com/k" is already keys.region`},
		{"zone overridden to the default region key", "keys: {zone: " + world.DefaultRegionKey + "}",
			world.Keys{}, `keys.zone: "topology.kubernetes.io/region" is already keys.region`},
		{"zone overridden to the default rack key, rack left default", "keys: {zone: " + world.DefaultRackKey + "}",
			world.Keys{}, `keys.rack: "zonepath.csi.dev/rack" is already keys.zone`},
		{"rack overridden to the default zone key", "keys: {rack: " + world.DefaultZoneKey + "}",
			world.Keys{}, `keys.rack: "topology.kubernetes.io/zone" is already keys.zone`},
		{"rack overridden to the overridden region key", "keys: {region: example.com/r, rack: example.com/r}",
			world.Keys{}, `keys.rack: "example.com/r" is already keys.region`},
		{"key with spaces", `keys: {region: "Not A Key"}`,
			world.Keys{}, `keys.region: "Not A Key" is not a label key`},
		{"key with empty name", `keys: {zone: "example.com/"}`,
			world.Keys{}, `keys.zone: "example.com/" is not a label key`},
		{"key with two slashes", `keys: {rack: "a/b/c"}`,
			world.Keys{}, `keys.rack: "a/b/c" is not a label key`},
		{"key with a bad prefix", `keys: {rack: "Example_Com/rack"}`,
			world.Keys{}, `keys.rack: "Example_Com/rack" is not a label key`},
		{"key name too long", "keys: {region: example.com/" + strings.Repeat("r", 64) + "}",
			world.Keys{}, `keys.region: "example.com/` + strings.Repeat("r", 64) + `" is not a label key`},
		{"invalid key reported before a duplicate", `keys: {region: "-r", zone: "-r"}`,
			world.Keys{}, `keys.region: "-r" is not a label key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			topo, err := world.Parse([]byte(tc.keys + "\n" + regions))
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse accepted keys %+v, want error containing %q", topo.Keys, tc.wantErr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Parse error %q does not contain %q", err, tc.wantErr)
				}
				if topo != nil {
					t.Errorf("Parse returned a topology with error %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if topo.Keys != tc.want {
				t.Fatalf("Keys = %+v, want %+v", topo.Keys, tc.want)
			}
			k := tc.want
			// Each zone's segment uses the keys and selects that zone alone.
			for i, want := range []map[string]string{{k.Region: "east", k.Zone: "a"}, {k.Region: "east", k.Zone: "b"}} {
				got := topo.Segment(i)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("Segment(%d) = %v, want %v", i, got, want)
				}
				if zones, err := topo.Select(got); err != nil || !reflect.DeepEqual(zones, []int{i}) {
					t.Errorf("Select(Segment(%d)) = %v, %v; want [%d]", i, zones, err, i)
				}
			}
			// Each key selects by its own field.
			for _, sel := range []struct {
				seg  map[string]string
				want []int
			}{
				{map[string]string{k.Region: "east"}, []int{0, 1}},
				{map[string]string{k.Zone: "b"}, []int{1}},
				{map[string]string{k.Rack: "r1"}, []int{0}},
			} {
				if zones, err := topo.Select(sel.seg); err != nil || !reflect.DeepEqual(zones, sel.want) {
					t.Errorf("Select(%v) = %v, %v; want %v", sel.seg, zones, err, sel.want)
				}
			}
			// A node's segment resolves back to its zone and rack.
			n, ok := topo.Node("n1")
			if !ok {
				t.Fatalf("Node(n1) not found")
			}
			nodeSeg, err := topo.NodeSegment(n.Zone, n.Rack)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{k.Region: "east", k.Zone: "a", k.Rack: "r1"}; !reflect.DeepEqual(nodeSeg, want) {
				t.Errorf("NodeSegment(n1) = %v, want %v", nodeSeg, want)
			}
			if zone, rack, err := topo.FindSegment(nodeSeg); err != nil || zone != 0 || rack != "r1" {
				t.Errorf("FindSegment(%v) = %d, %q, %v; want 0, r1", nodeSeg, zone, rack, err)
			}
			// A key the topology does not use is refused.
			for _, other := range []string{world.DefaultRegionKey, world.DefaultZoneKey, world.DefaultRackKey, "example.com/other"} {
				if other == k.Region || other == k.Zone || other == k.Rack {
					continue
				}
				if _, err := topo.Select(map[string]string{other: "east"}); err == nil || !strings.Contains(err.Error(), "unknown topology key") {
					t.Errorf("Select with unused key %q: err = %v, want unknown topology key", other, err)
				}
			}
			// File.Validate, used by code building a File, agrees.
			f := world.File{Keys: tc.want, Regions: []world.Region{{Name: "east", Zones: []world.Zone{{Name: "a"}}}}}
			if got, err := f.Validate(); err != nil || got.Keys != tc.want {
				t.Errorf("File.Validate with keys %+v = %v; want them accepted", tc.want, err)
			}
		})
	}
}

// TestValidateFileKeys: File.Validate refuses duplicate or invalid keys
// built in code, not only in a parsed file.
func TestValidateFileKeys(t *testing.T) {
	regions := []world.Region{{Name: "east", Zones: []world.Zone{{Name: "a"}}}}
	tests := []struct {
		keys    world.Keys
		wantErr string
	}{
		{world.Keys{Region: "x", Zone: "x"}, `keys.zone: "x" is already keys.region`},
		{world.Keys{Zone: "y", Rack: "y"}, `keys.rack: "y" is already keys.zone`},
		{world.Keys{Rack: world.DefaultRegionKey}, `keys.rack: "topology.kubernetes.io/region" is already keys.region`},
		{world.Keys{Zone: "Not A Key"}, `keys.zone: "Not A Key" is not a label key`},
		{world.Keys{Rack: "rack!"}, `keys.rack: "rack!" is not a label key`},
	}
	for _, tc := range tests {
		t.Run(tc.wantErr, func(t *testing.T) {
			topo, err := world.File{Keys: tc.keys, Regions: regions}.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate with keys %+v = %v, %v; want error containing %q", tc.keys, topo, err, tc.wantErr)
			}
		})
	}
}
