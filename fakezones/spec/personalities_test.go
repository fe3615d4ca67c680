package spec

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/driver/world"
)

// personalitiesDir holds issue 21's driver personalities: a cluster file
// each (or the name of the personality whose cluster it shares), and the
// segments its extension and sanity files place things in.
const personalitiesDir = "../../e2e/testdata/personalities"

// TestPersonalityClusters: every personality's cluster file loads (its
// driver section makes a topology file the driver takes), and every
// segment its ext.yaml and sanity.yaml name is one zone of that cluster's
// driver with nodes of the driver in it: a file naming a key the driver
// does not report, or a zone the cluster lacks, fails here before any
// cluster is brought up.
func TestPersonalityClusters(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(personalitiesDir, "*", "personality.yaml"))
	if err != nil || len(dirs) < 8 {
		t.Fatalf("%d personalities in %s (%v), want the issue's 8", len(dirs), personalitiesDir, err)
	}
	for _, p := range dirs {
		dir := filepath.Dir(p)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var meta struct {
				Cluster string `json:"cluster"`
			}
			readYAML(t, p, &meta)
			c, err := Load(filepath.Join(personalitiesDir, meta.Cluster, "cluster.yaml"))
			if err != nil {
				t.Fatalf("cluster %s: %v", meta.Cluster, err)
			}
			topo, err := c.ParseDriverTopology()
			if err != nil {
				t.Fatal(err)
			}
			withDriver := map[int]bool{}
			for _, n := range c.Nodes {
				if z, err := topo.FindZone(n.Region + "/" + n.Zone); err == nil && n.HasDriver() {
					withDriver[z] = true
				}
			}
			var ext, sanity struct {
				Segments   []map[string]string `json:"segments"`
				Exhaustion struct {
					Segment map[string]string `json:"exhaustedSegment"`
				} `json:"exhaustion"`
				Exhausted map[string]string `json:"exhaustedSegment"`
				Nodes     []struct {
					ID      string            `json:"id"`
					Segment map[string]string `json:"segment"`
				} `json:"nodes"`
			}
			readYAML(t, filepath.Join(dir, "ext.yaml"), &ext)
			readYAML(t, filepath.Join(dir, "sanity.yaml"), &sanity)
			segs := append(append(ext.Segments, sanity.Segments...), ext.Exhaustion.Segment, sanity.Exhausted)
			for _, s := range segs {
				if s == nil {
					continue
				}
				zones, err := topo.Select(s)
				if err != nil || !narrowest(topo, s, zones) || !withDriver[zones[0]] {
					t.Errorf("segment %v selects zones %v (%v); want one zone (a region's under keys.omitZone) with nodes of the driver", s, zones, err)
				}
			}
			for _, n := range sanity.Nodes {
				if err := nodeReports(c, topo, n.ID, n.Segment); err != nil {
					t.Errorf("sanity.yaml nodes: %v", err)
				}
			}
		})
	}
}

// nodeReports checks that id is a node of cluster c with the driver and
// that its NodeGetInfo reports seg (empty: a driver without topology,
// whose nodes report none).
func nodeReports(c *Cluster, topo *world.Topology, id string, seg map[string]string) error {
	i := slices.IndexFunc(c.Nodes, func(n Node) bool { return n.Name == id })
	if i < 0 || !c.Nodes[i].HasDriver() {
		return fmt.Errorf("%s is no node of the cluster with the driver", id)
	}
	n := c.Nodes[i]
	z, err := topo.FindZone(n.Region + "/" + n.Zone)
	if err != nil {
		return err
	}
	want, err := topo.NodeSegment(z, n.Rack)
	if err != nil || len(seg) > 0 && !maps.Equal(seg, want) {
		return fmt.Errorf("node %s: segment %v, its NodeGetInfo reports %v (%v)", id, seg, want, err)
	}
	return nil
}

// narrowest says whether segment s, selecting zones, is the narrowest
// segment the driver reports: one zone, or under keys.omitZone the
// region of the zones (the segment of each).
func narrowest(topo *world.Topology, s map[string]string, zones []int) bool {
	if !topo.Keys.OmitZone {
		return len(zones) == 1
	}
	return len(zones) > 0 && maps.Equal(topo.Segment(zones[0]), s)
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
