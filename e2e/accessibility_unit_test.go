// Unit tests of the judging of accessibility against the cluster's nodes
// (accessibility_test.go); no cluster needed.
package e2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/zonepath/zonepath/e2e/driverext"
)

const (
	region = "topology.kubernetes.io/region"
	zone   = "topology.kubernetes.io/zone"
	rack   = "topology.zonepath.csi.dev/rack"
	pzone  = "topology.zonepath.csi.dev/zone"
)

// node is a Ready node with labels.
func node(name string, labels map[string]string) v1.Node {
	return v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status:     v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
	}
}

// fakeZones are the nodes of hack/conformance/e2e-cluster.yaml as a
// driver reporting region, zone and a rack labels them: zone-a and zone-c
// in region-1, zone-b in region-2, one node per rack.
var fakeZones = []v1.Node{
	node("node-a-1", map[string]string{region: "region-1", zone: "zone-a", rack: "rack-1"}),
	node("node-a-2", map[string]string{region: "region-1", zone: "zone-a", rack: "rack-2"}),
	node("node-c-1", map[string]string{region: "region-1", zone: "zone-c", rack: "rack-1"}),
	node("node-b-1", map[string]string{region: "region-2", zone: "zone-b", rack: "rack-1"}),
}

// prefixedZones are nodes labelled only by the node plugin's
// registration, with a vendor-prefixed zone key.
var prefixedZones = []v1.Node{
	node("node-a-1", map[string]string{pzone: "zone-a"}),
	node("node-b-1", map[string]string{pzone: "zone-b"}),
}

// pv is a volume whose nodeAffinity has one term per segment.
func pv(segs ...map[string]string) *v1.PersistentVolume {
	var sel v1.NodeSelector
	for _, s := range segs {
		var t v1.NodeSelectorTerm
		for _, k := range sortedKeys(s) {
			t.MatchExpressions = append(t.MatchExpressions, v1.NodeSelectorRequirement{Key: k, Operator: v1.NodeSelectorOpIn, Values: []string{s[k]}})
		}
		sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, t)
	}
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{NodeAffinity: &v1.VolumeNodeAffinity{Required: &sel}}}
}

// A PV is accessible from a segment when its nodeAffinity admits a node
// of that segment, whatever keys the driver put in it. The first rows
// are issue 21's false failures: the old judging built a node from the
// segment's own keys, which a driver reporting more keys never admits.
func TestPVAccessibleFrom(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pv    *v1.PersistentVolume
		nodes []v1.Node
		seg   driverext.Segment
		want  string // the node that makes it accessible, "" outside
	}{
		{"driver reports region and zone, segment has the zone only", pv(map[string]string{region: "region-1", zone: "zone-a"}), fakeZones, driverext.Segment{zone: "zone-a"}, "node-a-1"},
		{"driver reports a rack too, segment has region and zone", pv(map[string]string{region: "region-1", zone: "zone-a", rack: "rack-2"}), fakeZones, driverext.Segment{region: "region-1", zone: "zone-a"}, "node-a-2"},
		{"driver reports fewer keys than the segment", pv(map[string]string{zone: "zone-c"}), fakeZones, driverext.Segment{region: "region-1", zone: "zone-c"}, "node-c-1"},
		{"vendor-prefixed keys", pv(map[string]string{pzone: "zone-b"}), prefixedZones, driverext.Segment{pzone: "zone-b"}, "node-b-1"},
		{"another zone is outside", pv(map[string]string{region: "region-1", zone: "zone-c"}), fakeZones, driverext.Segment{zone: "zone-a"}, ""},
		{"another region is outside", pv(map[string]string{region: "region-2", zone: "zone-a"}), fakeZones, driverext.Segment{zone: "zone-a"}, ""},
		{"a rack without a node in the segment is outside", pv(map[string]string{zone: "zone-c", rack: "rack-2"}), fakeZones, driverext.Segment{zone: "zone-c"}, ""},
		{"a segment without nodes admits nothing", pv(map[string]string{zone: "zone-d"}), fakeZones, driverext.Segment{zone: "zone-d"}, ""},
		{"no nodeAffinity is accessible from everywhere", &v1.PersistentVolume{}, fakeZones, driverext.Segment{zone: "zone-b"}, "node-b-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := admittedIn(tc.nodes, tc.seg, pvAdmits(tc.pv)); got != tc.want {
				t.Errorf("admittedIn(%s) = %q, want %q", tc.seg, got, tc.want)
			}
		})
	}
}

// The same judging for a snapshot content's nodeAffinity terms, as
// scenarios 1, 10 and 16c make it.
func TestTermsAccessibleFrom(t *testing.T) {
	regional := []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: region, Values: []string{"region-1"}}}}}
	zonal := terms(driverext.Segment{region: "region-1", zone: "zone-c", rack: "rack-1"})
	for _, tc := range []struct {
		name string
		ts   []v1.TopologySelectorTerm
		seg  driverext.Segment
		want string
	}{
		{"a regional snapshot from a zone-only segment", regional, driverext.Segment{zone: "zone-c"}, "node-c-1"},
		{"a regional snapshot outside another region", regional, driverext.Segment{zone: "zone-b"}, ""},
		{"a rack-wide snapshot from its zone", zonal, driverext.Segment{zone: "zone-c"}, "node-c-1"},
		{"a rack-wide snapshot outside the source's zone (scenario 10)", zonal, driverext.Segment{region: "region-1", zone: "zone-a"}, ""},
		{"no terms restrict nothing", nil, driverext.Segment{zone: "zone-a"}, "node-a-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := admittedIn(fakeZones, tc.seg, termsAdmit(tc.ts)); got != tc.want {
				t.Errorf("admittedIn(%s) = %q, want %q", tc.seg, got, tc.want)
			}
		})
	}
}

// Scenario 4: a restored volume must reach no node beyond snapshot ∩
// class, judged by the nodes whatever keys each side uses.
func TestAdmittedBeyond(t *testing.T) {
	snapshot := termsAdmit(terms(driverext.Segment{region: "region-1", zone: "zone-a"}))
	class := termsAdmit(terms(driverext.Segment{zone: "zone-a"}, driverext.Segment{zone: "zone-c"}))
	for _, tc := range []struct {
		name string
		pv   *v1.PersistentVolume
		want string
	}{
		{"inside both, with a rack", pv(map[string]string{region: "region-1", zone: "zone-a", rack: "rack-1"}), ""},
		{"inside the class, outside the snapshot", pv(map[string]string{zone: "zone-c"}), "node-c-1"},
		{"the whole region", pv(map[string]string{region: "region-1"}), "node-c-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := admittedBeyond(fakeZones, pvAdmits(tc.pv), snapshot, class); got != tc.want {
				t.Errorf("admittedBeyond = %q, want %q", got, tc.want)
			}
		})
	}
}

// The e2e half of issue 32 path 2: a volume meets its requisite when
// one of its segments does (TopologyRequirement.requisite: "at least
// one"), whatever else it is accessible from (x > n: the SP "MAY choose
// the remaining x-n unique topologies"), and whatever keys each side
// uses (EBS-style nodes carry a vendor zone key and an OS key the
// volume's segments lack). Only a volume none of whose segments meets the
// requisite fails: the mutant placing outside it.
func TestMeetsRequisite(t *testing.T) {
	const vendorZone, osKey = "topology.zonepath.csi.dev/zone", "kubernetes.io/os"
	ebsNodes := []v1.Node{
		node("node-a-1", map[string]string{region: "region-1", zone: "zone-a", vendorZone: "zone-a", osKey: "linux"}),
		node("node-c-1", map[string]string{region: "region-1", zone: "zone-c", vendorZone: "zone-c", osKey: "linux"}),
	}
	zoneA := termsAdmit(terms(driverext.Segment{region: "region-1", zone: "zone-a"}))
	ebsA := termsAdmit(terms(driverext.Segment{zone: "zone-a", vendorZone: "zone-a", osKey: "linux"}))
	snapshotA, classAC := termsAdmit(terms(driverext.Segment{zone: "zone-a"})), termsAdmit(terms(driverext.Segment{zone: "zone-a"}, driverext.Segment{zone: "zone-c"}))
	for _, tc := range []struct {
		name           string
		nodes          []v1.Node
		pv             *v1.PersistentVolume
		bound          []admits
		inside, beyond string
	}{
		{"zonal, inside", fakeZones, pv(map[string]string{region: "region-1", zone: "zone-a"}), []admits{zoneA}, "node-a-1", ""},
		{"regional, its first zone inside, its second beyond (x > n)", fakeZones,
			pv(map[string]string{region: "region-1", zone: "zone-a"}, map[string]string{region: "region-1", zone: "zone-c"}), []admits{zoneA}, "node-a-1", "node-c-1"},
		{"regional, its second zone inside", fakeZones,
			pv(map[string]string{region: "region-1", zone: "zone-c"}, map[string]string{region: "region-1", zone: "zone-a"}), []admits{zoneA}, "node-a-1", "node-c-1"},
		{"regional restore inside snapshot ∩ class, beyond the snapshot", fakeZones,
			pv(map[string]string{zone: "zone-a"}, map[string]string{zone: "zone-c"}), []admits{snapshotA, classAC}, "node-a-1", "node-c-1"},
		{"EBS keys: a zone-only volume, a requisite of the node's three keys", ebsNodes, pv(map[string]string{zone: "zone-a"}), []admits{ebsA}, "node-a-1", ""},
		{"mutant: zonal, outside", fakeZones, pv(map[string]string{region: "region-2", zone: "zone-b"}), []admits{zoneA}, "", "node-b-1"},
		{"mutant: regional, both zones outside", fakeZones,
			pv(map[string]string{region: "region-1", zone: "zone-c"}, map[string]string{region: "region-2", zone: "zone-b"}), []admits{zoneA}, "", "node-c-1"},
		{"mutant: restore in the class, outside the snapshot", fakeZones, pv(map[string]string{zone: "zone-c"}), []admits{snapshotA, classAC}, "", "node-c-1"},
		{"mutant: EBS keys, another zone", ebsNodes, pv(map[string]string{zone: "zone-c"}), []admits{ebsA}, "", "node-c-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inside, beyond := meetsRequisite(tc.nodes, pvAdmits(tc.pv), tc.bound...)
			if inside != tc.inside || beyond != tc.beyond {
				t.Errorf("meetsRequisite = %q, %q; want %q, %q", inside, beyond, tc.inside, tc.beyond)
			}
		})
	}
}

func term(kv ...string) v1.TopologySelectorTerm {
	var t v1.TopologySelectorTerm
	for i := 0; i < len(kv); i += 2 {
		t.MatchLabelExpressions = append(t.MatchLabelExpressions, v1.TopologySelectorLabelRequirement{Key: kv[i], Values: strings.Split(kv[i+1], ",")})
	}
	return t
}

// expectLossless accepts a driver reporting more keys than the driver
// file lists (they are in its CSINode entries) and one reporting fewer,
// and still refuses folded values, repeated keys and keys the driver has
// nowhere. The old check refused the first two.
func TestLosslessAndInside(t *testing.T) {
	fileKeys := []string{zone}
	reported := []string{rack, region, zone}
	seg := driverext.Segment{zone: "zone-a"}
	for _, tc := range []struct {
		name                  string
		t                     v1.TopologySelectorTerm
		keys                  []string
		seg                   driverext.Segment
		wantLossless, wantOut string // substrings of the problems, "" for none
	}{
		{"more keys than the file lists", term(region, "region-1", zone, "zone-a"), reported, seg, "", ""},
		{"a rack as well", term(region, "region-1", zone, "zone-a", rack, "rack-2"), reported, seg, "", ""},
		{"fewer keys than the segment", term(zone, "zone-a"), reported, driverext.Segment{region: "region-1", zone: "zone-a"}, "", ""},
		{"a key the driver has nowhere", term(region, "region-1", zone, "zone-a"), fileKeys, seg, "key topology.kubernetes.io/region is not a topology key", ""},
		{"folded values", term(region, "region-1", zone, "zone-a,zone-c"), reported, seg, "has 2 values", "node-c-1"},
		{"a repeated key", term(zone, "zone-a", zone, "zone-a"), reported, seg, "repeats", ""},
		{"a regional term is wider than the zone", term(region, "region-1"), reported, seg, "", "admits node node-c-1, which is not in {topology.kubernetes.io/zone=zone-a}"},
		{"another zone", term(region, "region-1", zone, "zone-c"), reported, seg, "", "admits node node-c-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct{ what, got, want string }{
				{"losslessProblem", losslessProblem(tc.t, tc.keys), tc.wantLossless},
				{"insideProblem", insideProblem(tc.t, fakeZones, tc.seg), tc.wantOut},
			} {
				if (c.want == "") != (c.got == "") || !strings.Contains(c.got, c.want) {
					t.Errorf("%s = %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
}

// A segment no schedulable node is in is an error of the extension file,
// said once with the segment and the labels the nodes carry.
func TestSegmentsProblem(t *testing.T) {
	file := func(segs ...driverext.Segment) []namedSegment { return extSegments(&driverext.File{Segments: segs}) }
	keys := []string{region, zone}
	for _, tc := range []struct {
		name  string
		nodes []v1.Node
		segs  []namedSegment
		want  []string // substrings of the error; none: no error
	}{
		{"every segment has nodes, with fewer keys than the nodes", fakeZones, file(driverext.Segment{zone: "zone-a"}, driverext.Segment{region: "region-2"}), nil},
		{"a misspelt zone", fakeZones, file(driverext.Segment{zone: "zone-a"}, driverext.Segment{zone: "zone-x"}),
			[]string{"segments[1] {topology.kubernetes.io/zone=zone-x}: no schedulable node is in it; the schedulable nodes carry topology.kubernetes.io/region=[region-1 region-2], topology.kubernetes.io/zone=[zone-a zone-b zone-c]"}},
		{"a zone of another region", fakeZones, file(driverext.Segment{region: "region-2", zone: "zone-a"}, driverext.Segment{zone: "zone-b"}),
			[]string{"segments[0] {topology.kubernetes.io/region=region-2,topology.kubernetes.io/zone=zone-a}: no schedulable node is in it;"}},
		{"well-known keys on a cluster labelled by registration only", prefixedZones, file(driverext.Segment{zone: "zone-a"}, driverext.Segment{zone: "zone-b"}),
			[]string{"segments[0] {topology.kubernetes.io/zone=zone-a}: no schedulable node is in it (no schedulable node carries key topology.kubernetes.io/zone); segments[1]", "the schedulable nodes carry none of the keys"}},
		{"the exhausted segment too", fakeZones, extSegments(&driverext.File{
			Segments:   []driverext.Segment{{zone: "zone-a"}, {zone: "zone-b"}},
			Exhaustion: &driverext.Exhaustion{ExhaustedSegment: driverext.Segment{zone: "zone-d"}},
		}), []string{"exhaustion.exhaustedSegment {topology.kubernetes.io/zone=zone-d}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := segmentsProblem(tc.nodes, tc.segs, keys)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// The setup reads the nodes a pod can go to and the keys the driver
// reports from the cluster: a cordoned or NotReady node is in no
// segment, and CSINode keys of other drivers do not count.
func TestCheckExtSegments(t *testing.T) {
	cordoned := node("node-b-1", map[string]string{zone: "zone-b"})
	cordoned.Spec.Unschedulable = true
	notReady := node("node-c-1", map[string]string{zone: "zone-c"})
	notReady.Status.Conditions[0].Status = v1.ConditionFalse
	a := node("node-a-1", map[string]string{zone: "zone-a", rack: "rack-1"})
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-a-1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "zonepath.csi.dev", TopologyKeys: []string{zone, rack}},
		{Name: "other.csi.dev", TopologyKeys: []string{"other/key"}},
	}}}
	client := fake.NewClientset(&a, &cordoned, &notReady, csiNode)
	ctx := context.Background()

	keys, err := reportedKeys(ctx, client, "zonepath.csi.dev", []string{zone})
	if err != nil || strings.Join(keys, " ") != zone+" "+rack {
		t.Errorf("reportedKeys = %v, %v; want [%s %s]", keys, err, zone, rack)
	}
	f := &driverext.File{Segments: []driverext.Segment{{zone: "zone-a"}, {zone: "zone-b"}, {zone: "zone-c"}}}
	err = checkExtSegments(ctx, client, "zonepath.csi.dev", []string{zone}, f)
	for _, w := range []string{"segments[1] {topology.kubernetes.io/zone=zone-b}", "segments[2] {topology.kubernetes.io/zone=zone-c}", "carry topology.kubernetes.io/zone=[zone-a], topology.zonepath.csi.dev/rack=[rack-1]"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("checkExtSegments = %v, want it to contain %q", err, w)
		}
	}
	if err := checkExtSegments(ctx, client, "zonepath.csi.dev", []string{zone}, &driverext.File{Segments: f.Segments[:1]}); err != nil {
		t.Errorf("checkExtSegments with zone-a only: %v", err)
	}
}

// The terms the suite writes from segments (StorageClass and
// VolumeSnapshotClass allowedTopologies, an admin's nodeAffinity) admit
// exactly the nodes of those segments, whether a segment has one key or
// three; crossTerm admits every node of every segment; a misspelt segment
// admits no node and keeps the region where one is declared beside other
// keys (a segment of the region key alone has it misspelt).
func TestTermsFromSegments(t *testing.T) {
	for _, segs := range [][]driverext.Segment{
		{{zone: "zone-a"}, {zone: "zone-b"}},
		{{region: "region-1"}, {region: "region-2"}},
		{{region: "region-1", zone: "zone-a"}, {region: "region-1", zone: "zone-c"}},
		{{region: "region-1", zone: "zone-a", rack: "rack-2"}, {region: "region-2", zone: "zone-b", rack: "rack-1"}},
	} {
		for _, seg := range segs {
			for _, n := range fakeZones {
				if got, want := termsMatch(terms(seg), n.Labels), inSegment(n.Labels, seg); got != want {
					t.Errorf("terms(%s) admits %s: %v, want %v", seg, n.Name, got, want)
				}
			}
			for _, regionKey := range []string{region, ""} {
				bad := misspelt(seg, regionKey)
				if node := admittedIn(fakeZones, driverext.Segment{}, termsAdmit(terms(bad))); node != "" {
					t.Errorf("misspelt(%s, %q) = %s admits node %s", seg, regionKey, bad, node)
				}
				if v, ok := seg[region]; ok && regionKey != "" && len(seg) > 1 && bad[region] != v {
					t.Errorf("misspelt(%s) = %s lost the region", seg, bad)
				}
			}
		}
		cross := crossTerm(segs)
		for _, n := range fakeZones {
			for _, seg := range segs {
				if inSegment(n.Labels, seg) && !termsMatch(cross, n.Labels) {
					t.Errorf("crossTerm(%v) excludes %s of %s", segs, n.Name, seg)
				}
			}
		}
	}
}

// Scenarios 12 and 13 need a segment the first snapshot does not reach:
// for a zonal snapshot the next zone, for a regional one another region,
// for one usable everywhere none.
func TestSegmentOutside(t *testing.T) {
	segs := []driverext.Segment{
		{region: "region-1", zone: "zone-a"}, {region: "region-1", zone: "zone-c"}, {region: "region-2", zone: "zone-b"},
	}
	for _, tc := range []struct {
		name     string
		affinity []v1.TopologySelectorTerm
		want     driverext.Segment
	}{
		{"zonal", terms(segs[0]), segs[1]},
		{"regional", []v1.TopologySelectorTerm{term(region, "region-1")}, segs[2]},
		{"zonal with a rack", []v1.TopologySelectorTerm{term(zone, "zone-a", rack, "rack-1")}, segs[1]},
		{"usable everywhere", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := segmentOutside(fakeZones, segs, termsAdmit(tc.affinity)); got.String() != tc.want.String() {
				t.Errorf("segmentOutside = %s, want %s", got, tc.want)
			}
		})
	}
}
