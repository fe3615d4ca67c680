package sanity

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

func TestUsableFromAndMeets(t *testing.T) {
	region := func(r string) *csi.Topology { return &csi.Topology{Segments: map[string]string{"region": r}} }
	zone := func(r, z string) *csi.Topology {
		return &csi.Topology{Segments: map[string]string{"region": r, "zone": z}}
	}
	tests := []struct {
		name         string
		topo         []*csi.Topology
		seg          *csi.Topology
		usable, meet bool
	}{
		{"same zone", []*csi.Topology{zone("r1", "a")}, zone("r1", "a"), true, true},
		{"other zone", []*csi.Topology{zone("r1", "a")}, zone("r1", "b"), false, false},
		{"one of several zones", []*csi.Topology{zone("r1", "a"), zone("r1", "b")}, zone("r1", "b"), true, true},
		{"region covers its zone", []*csi.Topology{region("r1")}, zone("r1", "a"), true, true},
		{"region does not cover another region's zone", []*csi.Topology{region("r1")}, zone("r2", "a"), false, false},
		{"a zone meets its region, but is not usable from all of it", []*csi.Topology{zone("r1", "a")}, region("r1"), false, true},
		{"no accessible_topology: usable everywhere", nil, zone("r2", "c"), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := usableFrom(tt.topo, tt.seg); got != tt.usable {
				t.Errorf("usableFrom(%s, %s) = %v, want %v", formatAll(tt.topo), format(tt.seg), got, tt.usable)
			}
			if got := meetsAny(tt.topo, []*csi.Topology{tt.seg}); got != tt.meet {
				t.Errorf("meetsAny(%s, %s) = %v, want %v", formatAll(tt.topo), format(tt.seg), got, tt.meet)
			}
		})
	}
}
