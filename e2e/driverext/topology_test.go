package driverext

import (
	"strings"
	"testing"
)

// TestSegmentsMissing: a spec placing volumes in n segments runs only
// with volume topology and n segments, and the reason names what lacks.
func TestSegmentsMissing(t *testing.T) {
	off := false
	one := &File{Segments: []Segment{{"z": "a"}}}
	two := &File{Segments: []Segment{{"z": "a"}, {"z": "b"}}}
	none := &File{VolumeTopology: &off}
	for _, tc := range []struct {
		name string
		f    *File
		n    int
		want string
	}{
		{"two of two", two, 2, ""},
		{"one of two", one, 2, "segments lists 1 segment(s); the spec needs 2"},
		{"one of one", one, 1, ""},
		{"no volume topology", none, 1, "volumeTopology is false (the driver lacks VOLUME_ACCESSIBILITY_CONSTRAINTS)"},
		{"no volume topology, none needed", none, 0, "volumeTopology is false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.SegmentsMissing(tc.n); (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("SegmentsMissing(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
	if got := one.SameRegion(); got != nil {
		t.Errorf("SameRegion of one segment = %v, want none", got)
	}
}

// TestNoTopologyFileValidates: a driver without volume topology lists no
// TopologyKeys, and its file still loads.
func TestNoTopologyFileValidates(t *testing.T) {
	f, err := Parse([]byte("volumeTopology: false\nsnapshotTopology: false\nattachLimits: {maxVolumesPerNode: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(nil); err != nil {
		t.Fatalf("Validate(nil) = %v, want none", err)
	}
	for name, why := range map[string]string{"exhaustion": f.ExhaustionMissing(), "zoneOutage": f.ZoneOutageMissing(), "unrestricted": f.UnrestrictedMissing(), "regionWide": f.RegionWideMissing()} {
		if !strings.Contains(why, "volumeTopology is false") {
			t.Errorf("%s: reason %q does not name volumeTopology", name, why)
		}
	}
}

// TestNodeLocalReasons: a node-local file's region and missing-driver
// reasons name nodeLocal, not a key; others' do not.
func TestNodeLocalReasons(t *testing.T) {
	local := &File{NodeLocal: true, Segments: []Segment{{"n": "a"}, {"n": "b"}}}
	zonal := &File{Segments: []Segment{{"z": "a"}, {"z": "b"}}}
	_, region := local.OtherRegion()
	for name, why := range map[string]string{"region": region, "regionWide": local.RegionWideMissing(), "missing driver": local.NodeLocalMissing()} {
		if !strings.HasPrefix(why, "driver ext: nodeLocal is true: ") {
			t.Errorf("%s: reason %q does not name nodeLocal", name, why)
		}
	}
	if why := zonal.NodeLocalMissing(); why != "" {
		t.Errorf("a zonal driver's NodeLocalMissing = %q, want none", why)
	}
	if _, why := zonal.OtherRegion(); strings.Contains(why, "nodeLocal") {
		t.Errorf("a zonal driver's OtherRegion reason %q names nodeLocal", why)
	}
}
