package sanity

import (
	"flag"
	"strings"
	"testing"
)

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
			func(c Config) bool {
				return c.AttachLimit == 7 && c.ExhaustAfter == 2 && len(c.Segments) == 2 && len(c.Nodes) == 3 && c.Nodes[0].Segment["topology.kubernetes.io/zone"] == "zone-a"
			}},
		{"attach limit ceiling", []string{"--zonepath.attach-limit-ceiling", "512"}, "",
			func(c Config) bool { return c.AttachLimitCeiling == 512 && c.attachLimitCeiling() == 512 }},
		{"attach limit ceiling defaults to 256", nil, "",
			func(c Config) bool {
				return c.attachLimitCeiling() == DefaultAttachLimitCeiling && DefaultAttachLimitCeiling == 256
			}},
		{"negative attach limit ceiling", []string{"--zonepath.attach-limit-ceiling", "-1"}, "attachLimitCeiling must not be negative", nil},
		{"wide snapshot parameters", []string{"--zonepath.wide-snapshot-parameters", "example.com/copies=2,example.com/scope=region"}, "",
			func(c Config) bool {
				return len(c.WideSnapshotParameters) == 2 && c.WideSnapshotParameters["example.com/copies"] == "2"
			}},
		{"malformed wide snapshot parameters", []string{"--zonepath.wide-snapshot-parameters", "copies"}, "wide-snapshot-parameters", nil},
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

// TestNodesValidated: a node without an ID, or one given twice, stops the
// suite before it runs.
func TestNodesValidated(t *testing.T) {
	for name, tc := range map[string]struct {
		nodes   []Node
		wantErr bool
	}{
		"two nodes":   {nodes: []Node{{ID: "a"}, {ID: "b", Segment: map[string]string{"z": "b"}}}},
		"no id":       {nodes: []Node{{Segment: map[string]string{"z": "b"}}}, wantErr: true},
		"the same id": {nodes: []Node{{ID: "a"}, {ID: "a"}}, wantErr: true},
		"none at all": {},
	} {
		if err := (Config{Nodes: tc.nodes}).Validate(); (err != nil) != tc.wantErr {
			t.Errorf("%s: Validate() = %v, want an error %t", name, err, tc.wantErr)
		}
	}
}
