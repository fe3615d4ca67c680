package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/drivertest"
)

// TestTerseErrors: with terseErrors every error keeps its code and says
// only the code's meaning, no zone and no object name (spec.md "Error
// Scheme": the message is "a human readable description"), injected
// faults included; without it the driver's own message stays.
func TestTerseErrors(t *testing.T) {
	const rules = `rules:
- name: flaky-zone-b
  match: {rpc: CreateVolume, name: "flaky-*"}
  action: {code: Unavailable, message: "backend of zone-b is busy"}
`
	misspelt := &csi.TopologyRequirement{Requisite: zones("zone-x")}
	tests := []struct {
		name, world string
		req         *csi.CreateVolumeRequest
		want        codes.Code
		msg         string // the exact message; "" means the driver's own, which must name the zone
	}{
		{"misspelt zone, terse", "terseErrors: true\n", drivertest.VolumeRequest("terse-1", gib, misspelt), codes.InvalidArgument, "invalid argument"},
		{"unknown source, terse", "terseErrors: true\n", sourceRequest("terse-2", "snap-missing"), codes.NotFound, "not found"},
		{"injected fault, terse", "terseErrors: true\n", drivertest.VolumeRequest("flaky-1", gib, nil), codes.Unavailable, "unavailable"},
		{"misspelt zone, default", "", drivertest.VolumeRequest("terse-3", gib, misspelt), codes.InvalidArgument, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClientIn(t, tt.world+drivertest.World(""), rules)
			_, err := c.CreateVolume(context.Background(), tt.req)
			st := status.Convert(err)
			if st.Code() != tt.want {
				t.Fatalf("CreateVolume = %v, want code %v", err, tt.want)
			}
			if tt.msg != "" && st.Message() != tt.msg {
				t.Fatalf("message %q, want only %q", st.Message(), tt.msg)
			}
			if tt.msg == "" && !strings.Contains(st.Message(), "zone-x") {
				t.Fatalf("message %q: without terseErrors the driver's message names the zone", st.Message())
			}
		})
	}
}

func sourceRequest(name, snapshot string) *csi.CreateVolumeRequest {
	req := drivertest.VolumeRequest(name, gib, nil)
	req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snapshot}}}
	return req
}
