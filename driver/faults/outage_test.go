package faults

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

func TestOutageParseErrors(t *testing.T) {
	const seg = "segment: {topology.kubernetes.io/zone: zone-b}"
	tests := []struct{ name, match, action, want string }{
		{"no segment", "{}", "outage: true", "match.segment: required with action.outage"},
		{"empty key", "segment: {'': a}", "outage: true", "match.segment: empty topology key"},
		{"with rpc", seg + "\nrpc: CreateVolume", "outage: true", "an outage takes only match.segment"},
		{"with nth", seg + "\nnth: 2", "outage: true", "an outage takes only match.segment"},
		{"with name", seg + "\nname: pvc-*", "outage: true", "an outage takes only match.segment"},
		{"with code", seg, "outage: true\ncode: Unavailable", "outage excludes code"},
		{"with delay", seg, "outage: true\ndelay: 1s", "outage excludes code"},
		{"with mutate", seg, "outage: true\nmutate: {clear: [volume]}", "outage excludes code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(oneRule(tt.match, tt.action)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestOutageDown(t *testing.T) {
	file := `rules:
- {name: b-down, match: {segment: {zone: zone-b}}, action: {outage: true}}
- {name: r2-down, match: {segment: {region: r2}}, action: {outage: true}}
- {name: other, match: {rpc: CreateVolume, segment: {zone: zone-a}}, action: {code: Unavailable}}
`
	inj := &Injector{nodeSegment: map[string]string{"zone": "zone-b"}} // a node in the down zone
	if err := inj.loadOnly([]byte(file)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		seg  map[string]string
		down bool
	}{
		{map[string]string{"region": "r1", "zone": "zone-b"}, true},
		{map[string]string{"region": "r1", "zone": "zone-a"}, false}, // a code rule is no outage
		{map[string]string{"region": "r2", "zone": "zone-c"}, true},  // a region outage takes its zones
		{map[string]string{"region": "r1"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := inj.Down(tt.seg); got != tt.down {
			t.Errorf("Down(%v) = %v, want %v", tt.seg, got, tt.down)
		}
	}
	if got := inj.Outages(); len(got) != 2 || got[0]["zone"] != "zone-b" || got[1]["region"] != "r2" {
		t.Errorf("Outages() = %v, want the segments of b-down and r2-down in file order", got)
	}
	var none *Injector
	if none.Down(map[string]string{"zone": "zone-b"}) || none.Outages() != nil {
		t.Error("a nil Injector reports an outage")
	}
	// An outage rule never acts on a call, even one in its segment.
	called := false
	_, err := inj.UnaryInterceptor()(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: "v"},
		&grpc.UnaryServerInfo{FullMethod: "/csi.v1.Node/NodeStageVolume"},
		func(context.Context, any) (any, error) { called = true; return &csi.NodeStageVolumeResponse{}, nil })
	if err != nil || !called {
		t.Fatalf("outage rule acted on a call: err %v, handler called %v", err, called)
	}
	// Lifting the outage (a rewritten file) brings the zone back.
	if err := inj.loadOnly([]byte("rules: []")); err != nil {
		t.Fatal(err)
	}
	if inj.Down(map[string]string{"zone": "zone-b"}) {
		t.Error("zone-b still down after the outage rule was removed")
	}
}
