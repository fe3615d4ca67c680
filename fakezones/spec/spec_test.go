package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

func TestExpand(t *testing.T) {
	cases := []struct {
		name  string
		file  File
		check func(t *testing.T, c *Cluster)
	}{
		{name: "defaults", check: func(t *testing.T, c *Cluster) {
			if c.Regions != 1 || c.Zones != 3 || c.NodesPerZone != 2 || len(c.Nodes) != 6 {
				t.Fatalf("defaults = %+v with %d nodes", c.File, len(c.Nodes))
			}
			if n := c.Nodes[5]; n.Name != "node-c-2" || n.Zone != "zone-c" || n.Region != "region-1" || !n.HasDriver() {
				t.Fatalf("last node = %+v", n)
			}
		}},
		{name: "zones round robin over regions", file: File{Regions: 2, Zones: 3, NodesPerZone: 1}, check: func(t *testing.T, c *Cluster) {
			var got []string
			for _, n := range c.Nodes {
				got = append(got, n.Region+"/"+n.Zone)
			}
			if strings.Join(got, " ") != "region-1/zone-a region-2/zone-b region-1/zone-c" {
				t.Fatalf("placement = %v", got)
			}
		}},
		{name: "overrides", file: File{MaxVolumesPerNode: 8, Nodes: []NodeOverride{
			{Name: "node-a-1", Registration: NoCSINode},
			{Name: "node-b-1", Registration: Late, RegisterAfter: metav1.Duration{Duration: time.Second}},
			{Name: "node-b-2", Registration: Late},
			{Name: "node-c-1", MaxVolumesPerNode: ptr.To[int64](2)},
			{Name: "node-c-2", Registration: OnLabel},
		}}, check: func(t *testing.T, c *Cluster) {
			byName := map[string]Node{}
			for _, n := range c.Nodes {
				byName[n.Name] = n
			}
			if n := byName["node-a-1"]; n.HasDriver() || n.Registration != NoCSINode {
				t.Errorf("node-a-1 = %+v", n)
			}
			if n := byName["node-b-1"]; !n.HasDriver() || n.RegisterAfter != time.Second {
				t.Errorf("node-b-1 = %+v", n)
			}
			if n := byName["node-b-2"]; n.RegisterAfter != 30*time.Second {
				t.Errorf("late without registerAfter waits %v, want the 30s default", n.RegisterAfter)
			}
			if n := byName["node-c-2"]; !n.HasDriver() || n.RegistersAtStart() || n.RegisterAfter != 0 {
				t.Errorf("on-label node-c-2 = %+v: want a driver, registered only when labelled, no timer", n)
			}
			if !byName["node-a-2"].RegistersAtStart() || byName["node-b-1"].RegistersAtStart() {
				t.Errorf("a registered node must register at start, a late one not")
			}
			if byName["node-c-1"].MaxVolumesPerNode != 2 || byName["node-c-2"].MaxVolumesPerNode != 8 {
				t.Errorf("attach limits = %d, %d", byName["node-c-1"].MaxVolumesPerNode, byName["node-c-2"].MaxVolumesPerNode)
			}
		}},
		{name: "5,000 nodes in 30 zones of 3 regions", file: File{Regions: 3, Zones: 30, NodesPerZone: 167}, check: func(t *testing.T, c *Cluster) {
			last := c.Nodes[len(c.Nodes)-1]
			if len(c.Nodes) != 5010 || last.Name != "node-ad-167" || last.Zone != "zone-ad" || last.Region != "region-3" {
				t.Fatalf("%d nodes, last %+v", len(c.Nodes), last)
			}
			if _, err := c.DriverTopology().Validate(); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "extra drivers", file: File{ExtraDrivers: []ExtraDriver{
			{Name: "nocap.zonepath.csi.dev", DisableCapabilities: []string{"SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"}},
			{Name: "second.example.com"},
		}}, check: func(t *testing.T, c *Cluster) {
			if got := strings.Join(c.Drivers(), " "); got != "zonepath.csi.dev nocap.zonepath.csi.dev second.example.com" {
				t.Fatalf("Drivers() = %s", got)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.file.Expand()
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// TestExpandErrors: every bad value is an error naming its key.
func TestExpandErrors(t *testing.T) {
	cases := []struct {
		name    string
		file    File
		wantErr string
	}{
		{name: "extra driver without name", file: File{ExtraDrivers: []ExtraDriver{{}}}, wantErr: "extraDrivers[0].name: a CSI driver name is required"},
		{name: "extra driver named like the main one", file: File{ExtraDrivers: []ExtraDriver{{Name: "zonepath.csi.dev"}}}, wantErr: `extraDrivers[0].name: "zonepath.csi.dev" is already a driver of this cluster`},
		{name: "extra driver twice", file: File{ExtraDrivers: []ExtraDriver{{Name: "a.dev"}, {Name: "a.dev"}}}, wantErr: `extraDrivers[1].name: "a.dev" is already`},
		{name: "extra driver name not CSI", file: File{ExtraDrivers: []ExtraDriver{{Name: "no_cap"}}}, wantErr: "extraDrivers[0].name: CSI driver name \"no_cap\" is not in domain name notation"},
		{name: "extra driver name uppercase", file: File{ExtraDrivers: []ExtraDriver{{Name: "NoCap.dev"}}}, wantErr: `extraDrivers[0].name: "NoCap.dev": a lowercase RFC 1123 subdomain`},
		{name: "extra driver unknown capability", file: File{ExtraDrivers: []ExtraDriver{{Name: "a.dev", DisableCapabilities: []string{"SNAPSHOTS"}}}}, wantErr: `extraDrivers[0].disableCapabilities: unknown capability "SNAPSHOTS"`},
		{name: "extra driver without controller", file: File{ExtraDrivers: []ExtraDriver{{Name: "a.dev", DisableCapabilities: []string{"CONTROLLER_SERVICE"}}}}, wantErr: "CONTROLLER_SERVICE cannot be disabled"},
		{name: "too many zones", file: File{Zones: 101}, wantErr: "zones: 101 is not between 1 and 100"},
		{name: "more regions than zones", file: File{Regions: 4, Zones: 3}, wantErr: "regions: 4"},
		{name: "negative nodes", file: File{NodesPerZone: -1}, wantErr: "nodesPerZone: -1"},
		{name: "too many nodes per zone", file: File{NodesPerZone: 5001}, wantErr: "nodesPerZone: 5001"},
		{name: "too many nodes", file: File{Zones: 3, NodesPerZone: 3334}, wantErr: "zones x nodesPerZone: 3 x 3334 is 10002 nodes, over the 10000"},
		{name: "negative limit", file: File{MaxVolumesPerNode: -1}, wantErr: "maxVolumesPerNode: -1"},
		{name: "unknown node", file: File{Nodes: []NodeOverride{{Name: "node-z-9"}}}, wantErr: `"node-z-9" is not a node of this cluster (nodes are named like node-a-1)`},
		{name: "node twice", file: File{Nodes: []NodeOverride{{Name: "node-a-1"}, {Name: "node-a-1"}}}, wantErr: "listed twice"},
		{name: "unknown registration", file: File{Nodes: []NodeOverride{{Name: "node-a-1", Registration: "maybe"}}}, wantErr: `registration "maybe" is not one of registered, late, no-driver, no-csinode, on-label`},
		{name: "registerAfter without late", file: File{Nodes: []NodeOverride{{Name: "node-a-1", RegisterAfter: metav1.Duration{Duration: time.Second}}}}, wantErr: `registerAfter needs registration "late"`},
		{name: "registerAfter with on-label", file: File{Nodes: []NodeOverride{{Name: "node-a-1", Registration: OnLabel, RegisterAfter: metav1.Duration{Duration: time.Second}}}}, wantErr: `registerAfter needs registration "late"`},
		{name: "negative node limit", file: File{Nodes: []NodeOverride{{Name: "node-a-1", MaxVolumesPerNode: ptr.To[int64](-2)}}}, wantErr: "maxVolumesPerNode -2"},
		{name: "quota of unknown zone", file: File{SnapshotQuotas: map[string]int64{"zone-q": 1}}, wantErr: `snapshotQuotas: "zone-q" is not a zone`},
		{name: "negative quota", file: File{SnapshotQuotas: map[string]int64{"zone-a": -1}}, wantErr: "zone-a: -1 is negative"},
		{name: "capacity of unknown zone", file: File{Capacities: map[string]resource.Quantity{"zone-q": resource.MustParse("1Gi")}}, wantErr: `capacities: "zone-q" is not a zone`},
		{name: "negative capacity", file: File{Capacities: map[string]resource.Quantity{"zone-a": resource.MustParse("-1Gi")}}, wantErr: "capacities: zone-a: -1Gi is negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.file.Expand(); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// The driver must accept the topology file the cluster writes for it,
// with every node that has the driver and no other.
// TestZoneName: the first 26 zones keep their one-letter names, later
// ones go on like spreadsheet columns, and every name is a DNS label.
func TestZoneName(t *testing.T) {
	for _, tc := range []struct {
		i    int
		want string
	}{
		{0, "zone-a"}, {25, "zone-z"}, {26, "zone-aa"}, {27, "zone-ab"}, {51, "zone-az"}, {52, "zone-ba"},
		{MaxZones - 1, "zone-cv"}, {701, "zone-zz"}, {702, "zone-aaa"},
	} {
		if got := ZoneName(tc.i); got != tc.want {
			t.Errorf("ZoneName(%d) = %s, want %s", tc.i, got, tc.want)
		}
	}
	seen := map[string]bool{}
	for i := range MaxZones {
		name := ZoneName(i)
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 || seen[name] {
			t.Fatalf("ZoneName(%d) = %q: %v, seen before: %v", i, name, errs, seen[name])
		}
		seen[name] = true
	}
}

func TestDriverTopologyValidates(t *testing.T) {
	c, err := File{Regions: 2, Zones: 4, NodesPerZone: 3, MaxVolumesPerNode: 5,
		SnapshotQuotas: map[string]int64{"zone-c": 2},
		Capacities:     map[string]resource.Quantity{"zone-c": resource.MustParse("3Gi")},
		Nodes:          []NodeOverride{{Name: "node-a-2", Registration: NoDriver}}}.Expand()
	if err != nil {
		t.Fatal(err)
	}
	f := c.DriverTopology()
	topo, err := f.Validate()
	if err != nil {
		t.Fatalf("driver rejects the cluster's topology: %v", err)
	}
	if len(f.Nodes) != 11 {
		t.Fatalf("%d nodes in the driver's topology, want 11 (12 minus the one without the driver)", len(f.Nodes))
	}
	if _, ok := topo.Node("node-a-2"); ok {
		t.Error("node-a-2 has no driver but the controller knows it")
	}
	n, ok := topo.Node("node-d-3")
	if !ok || n.MaxVolumesPerNode != 5 {
		t.Errorf("node-d-3 = %+v, %v", n, ok)
	}
	zc, ok := topo.Zone("region-1/zone-c")
	if !ok || zc.SnapshotQuota != 2 || zc.CapacityBytes != 3<<30 {
		t.Errorf("zone-c = %+v, %v; want snapshot quota 2 and capacity 3Gi", zc, ok)
	}
	if zb, _ := topo.Zone("region-2/zone-b"); zb.SnapshotQuota >= 0 || zb.CapacityBytes >= 0 {
		t.Errorf("zone-b quota = %d, capacity = %d, want both unlimited", zb.SnapshotQuota, zb.CapacityBytes)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("zones: 2\nnodesPerZone: 1\nnodes:\n- name: node-b-1\n  registration: late\n  registerAfter: 5s\n"), 0o644)
	c, err := Load(good)
	if err != nil || len(c.Nodes) != 2 || c.Nodes[1].RegisterAfter != 5*time.Second {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	for file, tc := range map[string]struct{ content, wantErr string }{
		"typo.yaml":       {"zone: 2\n", `unknown field "zone"`},
		"extra-typo.yaml": {"extraDrivers:\n- name: nocap.zonepath.csi.dev\n  disableCapability: [SNAPSHOT_ACCESSIBILITY_CONSTRAINTS]\n", `unknown field "disableCapability"`},
		"missing.yaml":    {"", "reading cluster file"},
	} {
		path := filepath.Join(dir, file)
		if tc.content != "" {
			os.WriteFile(path, []byte(tc.content), 0o644)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Load(%s) = %v, want an error containing %q", file, err, tc.wantErr)
		}
	}
}

// TestSchedulesByCapacity: CSIDrivers ask the scheduler to read
// CSIStorageCapacity unless the file says storageCapacity: false.
func TestSchedulesByCapacity(t *testing.T) {
	for _, tc := range []struct {
		file string
		want bool
	}{
		{file: "zones: 2\n", want: true},
		{file: "zones: 2\nstorageCapacity: true\n", want: true},
		{file: "zones: 2\nstorageCapacity: false\n", want: false},
	} {
		path := filepath.Join(t.TempDir(), "cluster.yaml")
		if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.SchedulesByCapacity(); got != tc.want {
			t.Errorf("%q: SchedulesByCapacity() = %v, want %v", tc.file, got, tc.want)
		}
	}
}
