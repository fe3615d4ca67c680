package sanity

import (
	"flag"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

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

func TestFlagsConfig(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(Config) bool
	}{
		{"segments in order", []string{"--zonepath.segment", "r=1,z=a", "--zonepath.segment", "r=1,z=b"}, "",
			func(c Config) bool { return len(c.Segments) == 2 && c.Segments[1]["z"] == "b" }},
		{"file then flags override", []string{"--zonepath.config", "testdata/zonepath.yaml", "--zonepath.attach-limit", "7"}, "",
			func(c Config) bool { return c.AttachLimit == 7 && c.ExhaustAfter == 2 && len(c.Segments) == 2 }},
		{"malformed segment", []string{"--zonepath.segment", "zone"}, "not key=value", nil},
		{"exhaust-after without a segment", []string{"--zonepath.exhaust-after", "2"}, "needs exhaustedSegment", nil},
		{"unknown code", []string{"--zonepath.incompatible-requirements", "Maybe"}, "AlreadyExists or OK", nil},
		{"missing file", []string{"--zonepath.config", "testdata/none.yaml"}, "no such file", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			f := RegisterFlags(fs)
			err := fs.Parse(tt.args)
			var c Config
			if err == nil {
				c, err = f.Config()
			}
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case !tt.check(c):
				t.Fatalf("config %+v", c)
			}
		})
	}
}
