package sanity

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

func TestUsableFromAndMeets(t *testing.T) {
	region := func(r string) *csi.Topology { return seg("region", r) }
	zone := func(r, z string) *csi.Topology { return seg("region", r, "zone", z) }
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

func seg(pairs ...string) *csi.Topology {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return &csi.Topology{Segments: m}
}

func TestWithin(t *testing.T) {
	za, zb := seg("region", "r1", "zone", "a"), seg("region", "r1", "zone", "b")
	r1 := seg("region", "r1")
	tests := []struct {
		name    string
		got     []*csi.Topology
		allowed []*csi.Topology
		ok      bool
	}{
		{"same segment", []*csi.Topology{za}, []*csi.Topology{za}, true},
		{"zone inside its region", []*csi.Topology{za}, []*csi.Topology{r1}, true},
		{"region is broader than a zone", []*csi.Topology{r1}, []*csi.Topology{za}, false},
		{"other zone", []*csi.Topology{zb}, []*csi.Topology{za}, false},
		{"one of several", []*csi.Topology{za, zb}, []*csi.Topology{zb, za}, true},
		{"one outside", []*csi.Topology{za, zb}, []*csi.Topology{za}, false},
		{"an empty allowed segment admits nothing", []*csi.Topology{za}, []*csi.Topology{seg()}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := within(tt.got, tt.allowed); (err == nil) != tt.ok {
				t.Fatalf("within = %v, want ok %t", err, tt.ok)
			}
		})
	}
}

func TestSameSegmentsIgnoresOrder(t *testing.T) {
	a, b := seg("zone", "a"), seg("zone", "b")
	if !sameSegments([]*csi.Topology{a, b}, []*csi.Topology{b, a}) {
		t.Fatal("order made a difference")
	}
	if sameSegments([]*csi.Topology{a}, []*csi.Topology{a, b}) || sameSegments(nil, []*csi.Topology{a}) {
		t.Fatal("different sets compared equal")
	}
}
