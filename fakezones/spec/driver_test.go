package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/driver/world"
)

// TestDriverSection: the driver section reaches the driver's topology
// file, racks spread a zone's nodes, and a mistake in it stops the
// cluster file at Load, before any process could start.
func TestDriverSection(t *testing.T) {
	cases := []struct {
		name, doc string
		check     func(t *testing.T, c *Cluster, topo *world.Topology)
		wantErr   string
	}{
		{name: "defaults keep the well-known keys and labels", doc: "zones: 2\n", check: func(t *testing.T, c *Cluster, topo *world.Topology) {
			if c.Keys.Region != world.DefaultRegionKey || c.Keys.Zone != world.DefaultZoneKey || c.Keys.OmitRegion {
				t.Errorf("Keys = %+v, want the defaults", c.Keys)
			}
			if !c.Nodes[0].WellKnownLabels || c.Nodes[0].Rack != "" {
				t.Errorf("node = %+v, want well-known labels and no rack", c.Nodes[0])
			}
		}},
		{name: "prefixed keys, no well-known labels", doc: "wellKnownNodeLabels: false\ndriver:\n  topology:\n    keys: {region: topology.zonepath.csi.dev/region, zone: topology.zonepath.csi.dev/zone}\n",
			check: func(t *testing.T, c *Cluster, topo *world.Topology) {
				if c.Keys.Zone != "topology.zonepath.csi.dev/zone" || topo.Keys != c.Keys {
					t.Errorf("Keys = %+v, driver's %+v; want the prefixed zone key in both", c.Keys, topo.Keys)
				}
				if c.Nodes[0].WellKnownLabels {
					t.Errorf("node %+v has well-known labels", c.Nodes[0])
				}
			}},
		{name: "knobs reach the driver", doc: "maxVolumesPerNode: 4\ndriver:\n  topology:\n    keys: {omitRegion: true}\n    snapshots: {defaultScope: global, sourceZoneOnly: true}\n    preattachedVolumesPerNode: 1\n",
			check: func(t *testing.T, c *Cluster, topo *world.Topology) {
				if !topo.Keys.OmitRegion || !c.Keys.OmitRegion || topo.Snapshots.DefaultScope != world.ScopeGlobal || !topo.Snapshots.SourceZoneOnly || topo.PreattachedVolumesPerNode() != 1 {
					t.Errorf("driver topology %+v, preattached %d: knobs lost", topo, topo.PreattachedVolumesPerNode())
				}
			}},
		{name: "a node's publishLimit reaches the driver", doc: "maxVolumesPerNode: 4\nnodes: [{name: node-a-2, maxVolumesPerNode: 2, publishLimit: 6}]\n",
			check: func(t *testing.T, c *Cluster, topo *world.Topology) {
				if n, ok := topo.Node("node-a-2"); !ok || n.MaxVolumesPerNode != 2 || n.ControllerLimit() != 6 {
					t.Errorf("driver's node-a-2 = %+v, %v; want limit 2 reported, 6 published", n, ok)
				}
				if n, _ := topo.Node("node-a-1"); n.ControllerLimit() != 4 {
					t.Errorf("driver's node-a-1 = %+v; want the default limit for both", n)
				}
			}},
		{name: "publishLimit below the node's limit", doc: "maxVolumesPerNode: 4\nnodes: [{name: node-a-2, publishLimit: 3}]\n", wantErr: "publishLimit 3 is below the node's maxVolumesPerNode 4"},
		{name: "an extra driver's terseErrors is its own", doc: "extraDrivers: [{name: terse.zonepath.csi.dev, terseErrors: true}, {name: plain.zonepath.csi.dev}]\n",
			check: func(t *testing.T, c *Cluster, topo *world.Topology) {
				if topo.TerseErrors {
					t.Error("the main driver has terseErrors, set only on an extra driver")
				}
				for i, want := range []bool{true, false} {
					data, err := c.ExtraDriverTopologyYAML(c.ExtraDrivers[i])
					if err != nil {
						t.Fatal(err)
					}
					extra, err := world.Parse(data)
					if err != nil || extra.TerseErrors != want || len(extra.Zones) != len(topo.Zones) {
						t.Errorf("extra driver %s: topology %+v, %v; want terseErrors %v and the main driver's zones", c.ExtraDrivers[i].Name, extra, err, want)
					}
				}
			}},
		{name: "racks", doc: "zones: 2\nnodesPerZone: 3\ndriver: {racksPerZone: 2}\n", check: func(t *testing.T, c *Cluster, topo *world.Topology) {
			var racks []string
			for _, n := range c.Nodes {
				racks = append(racks, n.Rack)
			}
			if got := strings.Join(racks, " "); got != "rack-1 rack-2 rack-1 rack-1 rack-2 rack-1" {
				t.Errorf("racks = %s", got)
			}
			if n, ok := topo.Node("node-b-2"); !ok || n.Rack != "rack-2" {
				t.Errorf("driver's node-b-2 = %+v, %v; want rack-2", n, ok)
			}
			if !topo.HasRacks() {
				t.Error("the driver's zones have no racks")
			}
		}},
		{name: "typo in the topology block", doc: "driver:\n  topology:\n    snapshots: {defaultScop: region}\n", wantErr: `unknown field "defaultScop"`},
		{name: "topology block the driver refuses", doc: "driver:\n  topology:\n    keys: {omitRegion: true}\n    snapshots: {defaultScope: region}\n",
			wantErr: "driver: the topology file it makes is not one the driver takes: snapshots.defaultScope"},
		{name: "pre-attached without room", doc: "maxVolumesPerNode: 1\ndriver:\n  topology: {preattachedVolumesPerNode: 1}\n", wantErr: "preattachedVolumesPerNode: 1 must be less than maxVolumesPerNode (1)"},
		{name: "omitRegion with regions is fine: zone names are unique", doc: "regions: 2\ndriver:\n  topology:\n    keys: {omitRegion: true}\n"},
		{name: "regional volumes reach the driver", doc: "regions: 2\nzones: 4\ndriver:\n  topology:\n    volumes: {replicas: 2}\n",
			check: func(t *testing.T, _ *Cluster, topo *world.Topology) {
				if topo.VolumeReplicas != 2 {
					t.Errorf("driver VolumeReplicas = %d, want 2", topo.VolumeReplicas)
				}
			}},
		{name: "node-only keys reach the driver", doc: "driver:\n  topology:\n    keys: {omitRegion: true, nodeZone: topology.zonepath.csi.dev/zone, nodeOS: kubernetes.io/os}\n",
			check: func(t *testing.T, _ *Cluster, topo *world.Topology) {
				if topo.Keys.NodeZone != "topology.zonepath.csi.dev/zone" || topo.Keys.NodeOS != "kubernetes.io/os" {
					t.Errorf("driver keys %+v: node-only keys lost", topo.Keys)
				}
			}},
		{name: "more replicas than a region's zones", doc: "regions: 2\nzones: 3\ndriver:\n  topology:\n    volumes: {replicas: 2}\n",
			wantErr: "volumes.replicas: 2 is more than the 1 zones of region region-2"},
		{name: "negative racks", doc: "driver: {racksPerZone: -1}\n", wantErr: "driver.racksPerZone: -1 is not between 0 and 100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cluster.yaml")
			if err := os.WriteFile(path, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := c.DriverTopologyYAML()
			if err != nil {
				t.Fatal(err)
			}
			topo, err := world.Parse(data)
			if err != nil {
				t.Fatalf("the driver refuses the file the cluster writes: %v\n%s", err, data)
			}
			if tc.check != nil {
				tc.check(t, c, topo)
			}
		})
	}
}
