package faults

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func snapshotResponse() *csi.CreateSnapshotResponse {
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
		SnapshotId:         "snap-1",
		SourceVolumeId:     "vol-1",
		SizeBytes:          100,
		ReadyToUse:         true,
		AccessibleTopology: topo(zone("b")),
	}}
}

func TestCodeActions(t *testing.T) {
	handlerErr := status.Error(codes.NotFound, "from handler")
	tests := []struct {
		name      string
		action    string
		handler   *fakeHandler
		wantCalls int32
		wantCode  codes.Code
		wantMsg   string
	}{
		{"before skips handler", "code: ResourceExhausted\nmessage: zone-b snapshot quota", &fakeHandler{resp: snapshotResponse()}, 0, codes.ResourceExhausted, "zone-b snapshot quota"},
		{"default message", "code: Unavailable\nwhen: before", &fakeHandler{resp: snapshotResponse()}, 0, codes.Unavailable, "injected fault r"},
		{"after calls handler and drops reply", "code: Unavailable\nwhen: after", &fakeHandler{resp: snapshotResponse()}, 1, codes.Unavailable, "injected fault r"},
		{"after hides handler error", "code: Aborted\nwhen: after", &fakeHandler{err: handlerErr}, 1, codes.Aborted, "injected fault r"},
		{"delay then code", "code: Internal\ndelay: 1ms", &fakeHandler{resp: snapshotResponse()}, 0, codes.Internal, "injected fault r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, _ := newInjector(t, oneRule("rpc: CreateSnapshot", tt.action), nil)
			resp, err := call(context.Background(), i, createSnapshot, &csi.CreateSnapshotRequest{}, tt.handler)
			if resp != nil {
				t.Errorf("resp = %v, want nil", resp)
			}
			st := status.Convert(err)
			if st.Code() != tt.wantCode || st.Message() != tt.wantMsg {
				t.Errorf("err = %v, want %v %q", err, tt.wantCode, tt.wantMsg)
			}
			if got := tt.handler.calls.Load(); got != tt.wantCalls {
				t.Errorf("handler called %d times, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expiring, cancel2 := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel2()
	tests := []struct {
		name      string
		ctx       context.Context
		action    string
		wantCode  codes.Code
		wantCalls int32
		minTime   time.Duration
	}{
		{"sleeps then calls handler", context.Background(), "delay: 30ms", codes.OK, 1, delay},
		{"cancelled context", cancelled, "delay: 1h", codes.Canceled, 0, 0},
		{"deadline exceeded", expiring, "delay: 1h", codes.DeadlineExceeded, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, _ := newInjector(t, oneRule("rpc: CreateSnapshot", tt.action), nil)
			h := &fakeHandler{resp: snapshotResponse()}
			start := time.Now()
			_, err := call(tt.ctx, i, createSnapshot, nil, h)
			elapsed := time.Since(start)
			if got := status.Code(err); got != tt.wantCode {
				t.Errorf("code = %v (%v), want %v", got, err, tt.wantCode)
			}
			if got := h.calls.Load(); got != tt.wantCalls {
				t.Errorf("handler called %d times, want %d", got, tt.wantCalls)
			}
			if elapsed < tt.minTime || elapsed > 10*time.Second {
				t.Errorf("took %v, want at least %v and far less than the 1h delay", elapsed, tt.minTime)
			}
		})
	}
}

func TestMutate(t *testing.T) {
	region2ZoneD := []*csi.Topology{{Segments: map[string]string{"topology.kubernetes.io/region": "region-2", "topology.kubernetes.io/zone": "zone-d"}}}
	tests := []struct {
		name    string
		method  string // default createSnapshot
		action  string
		handler *fakeHandler
		want    proto.Message
	}{
		{
			name:    "clear accessible_topology",
			action:  "mutate: {clear: [snapshot.accessible_topology]}",
			handler: &fakeHandler{resp: snapshotResponse()},
			want: &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
				SnapshotId: "snap-1", SourceVolumeId: "vol-1", SizeBytes: 100, ReadyToUse: true,
			}},
		},
		{
			name:    "set scalars of each kind",
			action:  "mutate: {set: {snapshot.snapshot_id: other, snapshot.size_bytes: 1, snapshot.ready_to_use: false}}",
			handler: &fakeHandler{resp: snapshotResponse()},
			want: &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
				SnapshotId: "other", SourceVolumeId: "vol-1", SizeBytes: 1, AccessibleTopology: topo(zone("b")),
			}},
		},
		{
			name:    "clear whole message",
			action:  "mutate: {clear: [snapshot]}",
			handler: &fakeHandler{resp: snapshotResponse()},
			want:    &csi.CreateSnapshotResponse{},
		},
		{
			name:    "clear below unset message is a no-op",
			action:  "mutate: {clear: [snapshot.accessible_topology]}",
			handler: &fakeHandler{resp: &csi.CreateSnapshotResponse{}},
			want:    &csi.CreateSnapshotResponse{},
		},
		{
			name:    "set creates intermediate message",
			action:  "mutate: {set: {snapshot.snapshot_id: x}}",
			handler: &fakeHandler{resp: &csi.CreateSnapshotResponse{}},
			want:    &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: "x"}},
		},
		{
			name: "set repeated message field from JSON string",
			action: `mutate:
  set:
    snapshot.accessible_topology: '[{"segments": {"topology.kubernetes.io/region": "region-2", "topology.kubernetes.io/zone": "zone-d"}}]'`,
			handler: &fakeHandler{resp: snapshotResponse()},
			want: &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
				SnapshotId: "snap-1", SourceVolumeId: "vol-1", SizeBytes: 100, ReadyToUse: true, AccessibleTopology: region2ZoneD,
			}},
		},
		{
			name: "set repeated message field from native YAML",
			action: `mutate:
  set:
    snapshot.accessible_topology:
    - segments:
        topology.kubernetes.io/region: region-2
        topology.kubernetes.io/zone: zone-d`,
			handler: &fakeHandler{resp: snapshotResponse()},
			want: &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
				SnapshotId: "snap-1", SourceVolumeId: "vol-1", SizeBytes: 100, ReadyToUse: true, AccessibleTopology: region2ZoneD,
			}},
		},
		{
			name:    "set empty list clears",
			action:  `mutate: {set: {snapshot.accessible_topology: '[]'}}`,
			handler: &fakeHandler{resp: snapshotResponse()},
			want: &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
				SnapshotId: "snap-1", SourceVolumeId: "vol-1", SizeBytes: 100, ReadyToUse: true,
			}},
		},
		{
			name:    "set well-known message type",
			action:  `mutate: {set: {snapshot.creation_time: '"2024-01-02T03:04:05Z"'}}`,
			handler: &fakeHandler{resp: &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{SnapshotId: "snap-1"}}},
			want: &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
				SnapshotId: "snap-1", CreationTime: &timestamppb.Timestamp{Seconds: 1704164645},
			}},
		},
		{
			name:    "set volume topology",
			method:  createVolume,
			action:  `mutate: {set: {volume.accessible_topology: '[{"segments": {"zone": "d"}}, {"segments": {"zone": "e"}}]'}}`,
			handler: &fakeHandler{resp: &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", AccessibleTopology: topo(zone("b"))}}},
			want:    &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", AccessibleTopology: topo(zone("d"), zone("e"))}},
		},
		{
			name:    "set creates intermediate message for repeated field",
			method:  createVolume,
			action:  `mutate: {set: {volume.accessible_topology: '[{"segments": {"zone": "d"}}]'}}`,
			handler: &fakeHandler{resp: &csi.CreateVolumeResponse{}},
			want:    &csi.CreateVolumeResponse{Volume: &csi.Volume{AccessibleTopology: topo(zone("d"))}},
		},
		{
			name:    "set map field replaces all entries",
			method:  createVolume,
			action:  `mutate: {set: {volume.volume_context: '{"a":"b"}'}}`,
			handler: &fakeHandler{resp: &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", VolumeContext: map[string]string{"x": "y"}}}},
			want:    &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", VolumeContext: map[string]string{"a": "b"}}},
		},
		{
			name:    "set empty map clears",
			method:  createVolume,
			action:  `mutate: {set: {volume.volume_context: '{}'}}`,
			handler: &fakeHandler{resp: &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1", VolumeContext: map[string]string{"x": "y"}}}},
			want:    &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "vol-1"}},
		},
		{
			name:    "set singular message field",
			method:  nodeGetInfo,
			action:  `mutate: {set: {accessible_topology: '{"segments": {"k": "v"}}'}}`,
			handler: &fakeHandler{resp: &csi.NodeGetInfoResponse{NodeId: "n1", AccessibleTopology: &csi.Topology{Segments: zone("a")}}},
			want:    &csi.NodeGetInfoResponse{NodeId: "n1", AccessibleTopology: &csi.Topology{Segments: map[string]string{"k": "v"}}},
		},
		{
			name:    "set singular message field to null clears",
			method:  nodeGetInfo,
			action:  `mutate: {set: {accessible_topology: 'null'}}`,
			handler: &fakeHandler{resp: &csi.NodeGetInfoResponse{NodeId: "n1", AccessibleTopology: &csi.Topology{Segments: zone("a")}}},
			want:    &csi.NodeGetInfoResponse{NodeId: "n1"},
		},
		{
			name:    "set scalar next to message field",
			method:  nodeGetInfo,
			action:  `mutate: {set: {max_volumes_per_node: 7}}`,
			handler: &fakeHandler{resp: &csi.NodeGetInfoResponse{NodeId: "n1", AccessibleTopology: &csi.Topology{Segments: zone("a")}}},
			want:    &csi.NodeGetInfoResponse{NodeId: "n1", MaxVolumesPerNode: 7, AccessibleTopology: &csi.Topology{Segments: zone("a")}},
		},
		{
			// The driver writes list responses as raw bytes
			// (driver/plugin/entries.go); a path must reach them all the same.
			name:   "clear next_token of a response carried as raw bytes",
			method: listVolumes,
			action: "mutate: {clear: [next_token]}",
			handler: &fakeHandler{resp: raw(t, &csi.ListVolumesResponse{
				Entries: []*csi.ListVolumesResponse_Entry{{Volume: &csi.Volume{VolumeId: "vol-1"}}}, NextToken: "t1"})},
			want: &csi.ListVolumesResponse{Entries: []*csi.ListVolumesResponse_Entry{{Volume: &csi.Volume{VolumeId: "vol-1"}}}},
		},
		{
			name:    "set inside a response carried as raw bytes",
			method:  listSnapshots,
			action:  `mutate: {set: {entries: '[]'}}`,
			handler: &fakeHandler{resp: raw(t, &csi.ListSnapshotsResponse{Entries: []*csi.ListSnapshotsResponse_Entry{{Snapshot: &csi.Snapshot{SnapshotId: "snap-1"}}}, NextToken: "t1"})},
			want:    &csi.ListSnapshotsResponse{NextToken: "t1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := cmp.Or(tt.method, createSnapshot)
			i, _ := newInjector(t, oneRule("rpc: "+method, tt.action), nil)
			original := proto.Clone(tt.handler.resp.(proto.Message))
			ctx := context.Background()
			resp, err := call(ctx, i, method, nil, tt.handler)
			if err != nil || !proto.Equal(resp.(proto.Message), tt.want) {
				t.Errorf("got %v, %v; want %v", resp, err, tt.want)
			}
			if !proto.Equal(tt.handler.resp.(proto.Message), original) {
				t.Errorf("handler's own response was modified: %v", tt.handler.resp)
			}
		})
	}
}

func TestMutateSkipsFailedCalls(t *testing.T) {
	i, _ := newInjector(t, oneRule("rpc: CreateSnapshot", "mutate: {clear: [snapshot]}"), nil)
	wantErr := status.Error(codes.NotFound, "no source")
	h := &fakeHandler{resp: snapshotResponse(), err: wantErr}
	resp, err := call(context.Background(), i, createSnapshot, nil, h)
	if !errors.Is(err, wantErr) || !proto.Equal(resp.(proto.Message), snapshotResponse()) {
		t.Errorf("got %v, %v; want the handler's reply untouched", resp, err)
	}
}

func TestFiredFaultIsLogged(t *testing.T) {
	i, _ := newInjector(t, oneRule("rpc: CreateSnapshot\nnth: 2", "code: Aborted"), nil)
	ctx, logs := logContext(t)
	call(ctx, i, createSnapshot, nil, &fakeHandler{})
	if strings.Contains(logs(), "Injecting fault") {
		t.Fatalf("logged a fault before the rule fired:\n%s", logs())
	}
	call(ctx, i, createSnapshot, nil, &fakeHandler{})
	for _, want := range []string{"Injecting fault", `rule="r"`, `method="` + createSnapshot + `"`, `matchedCall=2`} {
		if !strings.Contains(logs(), want) {
			t.Errorf("log lacks %s:\n%s", want, logs())
		}
	}
}

// raw returns m with every field carried as unknown bytes, as the driver
// sends its list responses.
func raw(t *testing.T, m proto.Message) proto.Message {
	t.Helper()
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New()
	out.SetUnknown(data)
	return out.Interface()
}
