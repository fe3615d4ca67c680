package faults

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type testCall struct {
	method string
	req    any
	fault  bool // want the rule to fire
}

func topo(segs ...map[string]string) []*csi.Topology {
	var out []*csi.Topology
	for _, s := range segs {
		out = append(out, &csi.Topology{Segments: s})
	}
	return out
}

func zone(z string) map[string]string { return map[string]string{"zone": z} }

func createVolumeIn(requisite, preferred []*csi.Topology) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{Name: "pvc-1", AccessibilityRequirements: &csi.TopologyRequirement{Requisite: requisite, Preferred: preferred}}
}

func fromSnapshot(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
}

func fromVolume(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
}

func TestMatch(t *testing.T) {
	snapReq := &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: "vol-1"}
	tests := []struct {
		name  string
		match string
		node  map[string]string
		calls []testCall
	}{
		{"short name", "rpc: CreateSnapshot", nil, []testCall{
			{createSnapshot, snapReq, true}, {deleteSnapshot, nil, false}, {createVolume, nil, false},
		}},
		{"full method", "rpc: /csi.v1.Controller/CreateSnapshot", nil, []testCall{
			{createSnapshot, snapReq, true}, {"/csi.v1.Controller/ListSnapshots", nil, false},
		}},
		{"glob on short name", `rpc: "*Snapshot*"`, nil, []testCall{
			{createSnapshot, nil, true}, {deleteSnapshot, nil, true}, {listSnapshots, nil, true}, {createVolume, nil, false},
		}},
		{"glob on full method", `rpc: "/csi.v1.Node/*"`, nil, []testCall{
			{nodeStage, nil, true}, {createVolume, nil, false},
		}},
		{"segment in requisite", "rpc: CreateVolume\nsegment: {zone: b}", nil, []testCall{
			{createVolume, createVolumeIn(topo(zone("a"), zone("b")), nil), true},
			{createVolume, createVolumeIn(topo(zone("a")), nil), false},
		}},
		{"segment in preferred", "rpc: CreateVolume\nsegment: {zone: b}", nil, []testCall{
			{createVolume, createVolumeIn(topo(zone("a")), topo(zone("b"))), true},
		}},
		{"segment on CreateSnapshot requirements", "rpc: CreateSnapshot\nsegment: {zone: b}", zone("b"), []testCall{
			{createSnapshot, &csi.CreateSnapshotRequest{AccessibilityRequirements: &csi.TopologyRequirement{Requisite: topo(zone("b"))}}, true},
			{createSnapshot, &csi.CreateSnapshotRequest{AccessibilityRequirements: &csi.TopologyRequirement{Requisite: topo(zone("a"))}}, false},
		}},
		{"all segment keys in one segment", "rpc: CreateVolume\nsegment: {zone: b, region: r1}", nil, []testCall{
			{createVolume, createVolumeIn(topo(map[string]string{"zone": "b", "region": "r2"}, map[string]string{"zone": "a", "region": "r1"}), nil), false},
			{createVolume, createVolumeIn(topo(map[string]string{"zone": "b", "region": "r1", "rack": "7"}), nil), true},
		}},
		{"node segment", "rpc: NodeStageVolume\nsegment: {zone: b}", map[string]string{"zone": "b", "host": "n1"}, []testCall{
			{nodeStage, &csi.NodeStageVolumeRequest{VolumeId: "vol-1"}, true},
		}},
		{"other node segment", "rpc: NodeStageVolume\nsegment: {zone: b}", zone("a"), []testCall{
			{nodeStage, &csi.NodeStageVolumeRequest{VolumeId: "vol-1"}, false},
		}},
		{"no node segment", `rpc: "*"` + "\nsegment: {zone: b}", nil, []testCall{
			{nodeStage, nil, false},
		}},
		{"node segment when requirements unset", "rpc: CreateVolume\nsegment: {zone: b}", zone("b"), []testCall{
			{createVolume, &csi.CreateVolumeRequest{Name: "pvc-1"}, true},
		}},
		{"requirements override node segment", "rpc: CreateVolume\nsegment: {zone: b}", zone("b"), []testCall{
			{createVolume, createVolumeIn(topo(zone("a")), nil), false},
		}},
		{"name glob on volume_id", `rpc: "*"` + "\nname: vol-*", nil, []testCall{
			{deleteVolume, &csi.DeleteVolumeRequest{VolumeId: "vol-1"}, true},
			{deleteVolume, &csi.DeleteVolumeRequest{VolumeId: "pvc-1"}, false},
		}},
		{"name glob on snapshot_id", "rpc: DeleteSnapshot\nname: snap-?", nil, []testCall{
			{deleteSnapshot, &csi.DeleteSnapshotRequest{SnapshotId: "snap-1"}, true},
			{deleteSnapshot, &csi.DeleteSnapshotRequest{SnapshotId: "snap-12"}, false},
		}},
		{"name glob on name and source_volume_id", "rpc: CreateSnapshot\nname: vol-9", nil, []testCall{
			{createSnapshot, &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: "vol-9"}, true},
			{createSnapshot, &csi.CreateSnapshotRequest{Name: "vol-9"}, true},
			{createSnapshot, &csi.CreateSnapshotRequest{Name: "snap-1", SourceVolumeId: "vol-8"}, false},
		}},
		{"name glob on content source", "rpc: CreateVolume\nname: src-*", nil, []testCall{
			{createVolume, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeContentSource: fromSnapshot("src-snap")}, true},
			{createVolume, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeContentSource: fromVolume("src-vol")}, true},
			{createVolume, &csi.CreateVolumeRequest{Name: "pvc-1", VolumeContentSource: fromVolume("vol-2")}, false},
			{createVolume, &csi.CreateVolumeRequest{Name: "pvc-1"}, false},
		}},
		{"name glob without names", `rpc: "*"` + "\nname: '*'", nil, []testCall{
			{ctrlGetCaps, &csi.ControllerGetCapabilitiesRequest{}, false},
			{deleteVolume, &csi.DeleteVolumeRequest{}, false},
		}},
		{"nth and count window", "rpc: CreateSnapshot\nnth: 2\ncount: 2", nil, []testCall{
			{createSnapshot, nil, false}, {createSnapshot, nil, true}, {createSnapshot, nil, true}, {createSnapshot, nil, false}, {createSnapshot, nil, false},
		}},
		{"nth unlimited", "rpc: CreateSnapshot\nnth: 3", nil, []testCall{
			{createSnapshot, nil, false}, {createSnapshot, nil, false}, {createSnapshot, nil, true}, {createSnapshot, nil, true},
		}},
		{"count once", "rpc: CreateSnapshot\ncount: 1", nil, []testCall{
			{createSnapshot, nil, true}, {createSnapshot, nil, false}, {createSnapshot, nil, false},
		}},
		{"only matching calls count", "rpc: CreateVolume\nsegment: {zone: b}\nnth: 2", nil, []testCall{
			{createVolume, createVolumeIn(topo(zone("b")), nil), false},
			{createVolume, createVolumeIn(topo(zone("a")), nil), false},
			{createSnapshot, nil, false},
			{createVolume, createVolumeIn(topo(zone("b")), nil), true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, _ := newInjector(t, oneRule(tt.match, "code: Unavailable"), tt.node)
			for n, c := range tt.calls {
				h := &fakeHandler{resp: "ok"}
				resp, err := call(context.Background(), i, c.method, c.req, h)
				fired := status.Code(err) == codes.Unavailable
				if fired != c.fault {
					t.Errorf("call %d (%s): fired=%v, want %v (resp=%v err=%v)", n+1, c.method, fired, c.fault, resp, err)
				}
				if !c.fault && (err != nil || resp != "ok" || h.calls.Load() != 1) {
					t.Errorf("call %d (%s): pass-through got resp=%v err=%v handler calls=%d", n+1, c.method, resp, err, h.calls.Load())
				}
			}
		})
	}
}

// TestRuleOrder checks the documented semantics: every rule counts its own
// matches, and only the first rule in its window acts.
func TestRuleOrder(t *testing.T) {
	file := `rules:
- {name: first, match: {rpc: CreateSnapshot, count: 1}, action: {code: Aborted}}
- {name: shadowed, match: {rpc: CreateSnapshot, count: 1}, action: {code: DataLoss}}
- {name: second, match: {rpc: CreateSnapshot, nth: 2}, action: {code: Unavailable}}
`
	i, _ := newInjector(t, file, nil)
	want := []codes.Code{codes.Aborted, codes.Unavailable, codes.Unavailable}
	for n, code := range want {
		_, err := call(context.Background(), i, createSnapshot, nil, &fakeHandler{})
		if got := status.Code(err); got != code {
			t.Errorf("call %d: code %v, want %v", n+1, got, code)
		}
	}
	wantStats := []RuleStats{{"first", 3, 1}, {"shadowed", 3, 0}, {"second", 3, 2}}
	for n, got := range i.Stats() {
		if got != wantStats[n] {
			t.Errorf("stats[%d] = %+v, want %+v", n, got, wantStats[n])
		}
	}
}
