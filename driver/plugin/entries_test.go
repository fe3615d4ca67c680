package plugin

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// The list responses are written from cached encodings (entries.go).
// These tests hold them to what encoding the plain messages gives, page
// by page, while records are created, replaced, published and deleted.

const testNode = "node-1"

// newListPlugin is a controller and node plugin in the default world,
// its node in zone-a, where volumes go by default.
func newListPlugin(t *testing.T) *Plugin {
	t.Helper()
	p, err := New(Config{StateDir: t.TempDir(), ServeController: true, ServeNode: true, NodeID: testNode, Mount: "none"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func mustVolume(t *testing.T, p *Plugin, name string) string {
	t.Helper()
	return mustVolumeOf(t, p, name, mountCapability())
}

// mustVolumeOf creates a 1 MiB volume with the capability.
func mustVolumeOf(t *testing.T, p *Plugin, name string, capability *csi.VolumeCapability) string {
	t.Helper()
	resp, err := p.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csi.VolumeCapability{capability},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetVolume().GetVolumeId()
}

func mustSnapshot(t *testing.T, p *Plugin, name, source string, params map[string]string) string {
	t.Helper()
	resp, err := p.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: source, Parameters: params})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetSnapshot().GetSnapshotId()
}

// plainVolumes is ListVolumes' page built and encoded the plain way.
func plainVolumes(p *Plugin, from string, max int32) *csi.ListVolumesResponse {
	vols, next := p.store.ListPublishedVolumes(from, int(max))
	resp := &csi.ListVolumesResponse{}
	for _, v := range vols {
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{
			Volume: p.csiVolume(v.Volume), Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: v.Nodes}})
	}
	if next != "" {
		resp.NextToken = encodeToken(next)
	}
	return resp
}

// plainSnapshots is ListSnapshots' page built and encoded the plain way.
func plainSnapshots(p *Plugin, from string, max int32, source string) *csi.ListSnapshotsResponse {
	snaps, next := p.store.ListSnapshots(from, int(max), source)
	resp := &csi.ListSnapshotsResponse{}
	for _, s := range snaps {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: p.csiSnapshot(s)})
	}
	if next != "" {
		resp.NextToken = encodeToken(next)
	}
	return resp
}

// samePage fails unless got, as sent, is byte for byte the deterministic
// encoding of want (entries in order, fields in number order, map keys
// sorted), and decodes into a message equal to want.
func samePage(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	wire, err := proto.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wire, plain) {
		t.Errorf("%s: sent %d bytes that differ from the plain encoding's %d", what, len(wire), len(plain))
	}
	decoded := want.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(wire, decoded); err != nil || !proto.Equal(decoded, want) {
		t.Errorf("%s: sent %v (%v), want %v", what, decoded, err, want)
	}
}

// walk lists every page of max entries and returns the IDs, checking
// each page against the plain encoding and the paging invariants.
func walk(t *testing.T, p *Plugin, snapshots bool, max int32, source string) []string {
	t.Helper()
	var ids []string
	token := ""
	for page := 0; ; page++ {
		what := fmt.Sprintf("page %d of max_entries %d from %q", page, max, token)
		from, err := decodeToken(token)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		var next string
		if snapshots {
			resp, err := p.ListSnapshots(context.Background(), &csi.ListSnapshotsRequest{MaxEntries: max, StartingToken: token, SourceVolumeId: source})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			want := plainSnapshots(p, from, max, source)
			samePage(t, "ListSnapshots "+what, resp, want)
			for _, e := range want.Entries {
				ids = append(ids, e.Snapshot.SnapshotId)
			}
			n, next = len(want.Entries), want.NextToken
		} else {
			resp, err := p.ListVolumes(context.Background(), &csi.ListVolumesRequest{MaxEntries: max, StartingToken: token})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			want := plainVolumes(p, from, max)
			samePage(t, "ListVolumes "+what, resp, want)
			for _, e := range want.Entries {
				ids = append(ids, e.Volume.VolumeId)
			}
			n, next = len(want.Entries), want.NextToken
		}
		if max > 0 && n > int(max) {
			t.Fatalf("%s: %d entries", what, n)
		}
		if next == "" {
			return ids
		}
		if n == 0 {
			t.Fatalf("%s: an empty page with next_token %q", what, next)
		}
		token = next
	}
}

// checkListing checks a complete listing at several page sizes: every
// page as plain, together exactly want in ID order, in ceil(n/max) pages.
func checkListing(t *testing.T, p *Plugin, snapshots bool, source string, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	for _, max := range []int32{0, 1, 7, 100, 101} {
		if got := walk(t, p, snapshots, max, source); !slices.Equal(got, want) {
			t.Fatalf("snapshots %v, source %q, max_entries %d: listed %d IDs %v, want %d %v", snapshots, source, max, len(got), got, len(want), want)
		}
	}
}

// TestListingsAtManySizes grows the driver through page boundaries and
// checks complete listings of volumes, snapshots and one source's
// snapshots at each size.
func TestListingsAtManySizes(t *testing.T) {
	p := newListPlugin(t)
	var vols, snaps []string
	bySource := map[string][]string{}
	for _, n := range []int{0, 1, 2, 99, 100, 101, 201} {
		for len(vols) < n {
			vols = append(vols, mustVolume(t, p, fmt.Sprintf("v%d", len(vols))))
			src := vols[len(vols)/3] // a few sources with many snapshots
			id := mustSnapshot(t, p, fmt.Sprintf("s%d", len(snaps)), src, nil)
			snaps = append(snaps, id)
			bySource[src] = append(bySource[src], id)
		}
		t.Run(fmt.Sprintf("objects=%d", n), func(t *testing.T) {
			checkListing(t, p, false, "", vols)
			checkListing(t, p, true, "", snaps)
			if n > 0 {
				checkListing(t, p, true, vols[0], bySource[vols[0]])
			}
		})
	}
}

// TestListingsFollowChanges: a listing made after a record changed shows
// the change, though the previous listing cached its entry.
func TestListingsFollowChanges(t *testing.T) {
	ctx := context.Background()
	p := newListPlugin(t)
	var vols, snaps []string
	for i := range 6 {
		vols = append(vols, mustVolume(t, p, fmt.Sprintf("v%d", i)))
	}
	for i, params := range []map[string]string{nil, {ParamSnapshotScope: "region"}, {ParamSnapshotScope: "global"}, nil} {
		snaps = append(snaps, mustSnapshot(t, p, fmt.Sprintf("s%d", i), vols[i], params))
	}
	checkListing(t, p, false, "", vols) // caches every entry
	checkListing(t, p, true, "", snaps)

	changes := []struct {
		name    string
		change  func() error
		volumes []string // the volumes listed afterwards; nil: unchanged
	}{
		{"expanded: a new record", func() error {
			_, err := p.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vols[1], CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
			return err
		}, nil},
		{"published", func() error {
			_, err := p.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vols[2], NodeId: testNode, VolumeCapability: mountCapability()})
			return err
		}, nil},
		{"unpublished", func() error {
			_, err := p.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vols[2], NodeId: testNode})
			return err
		}, nil},
		{"deleted", func() error {
			_, err := p.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vols[5]})
			return err
		}, vols[:5]},
		{"recreated under the same name: a new ID", func() error {
			vols[5] = mustVolume(t, p, "v5")
			return nil
		}, vols},
	}
	for _, c := range changes {
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := vols
		if c.volumes != nil {
			want = c.volumes
		}
		checkListing(t, p, false, "", want)
	}
	if _, err := p.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snaps[1]}); err != nil {
		t.Fatal(err)
	}
	checkListing(t, p, true, "", slices.Delete(slices.Clone(snaps), 1, 2))
	// Deleted records' encodings are dropped, not kept forever.
	if _, ok := p.snapshotEntries.entries[snaps[1]]; ok {
		t.Error("the deleted snapshot's encoding is still cached")
	}
	if len(p.volumeEntries.entries) != len(vols) {
		t.Errorf("%d volume encodings cached, want %d", len(p.volumeEntries.entries), len(vols))
	}
}

// TestListingResumesAfterTokenDeleted: a token names the next page's first
// entry; when that entry is deleted meanwhile the listing goes on from the
// one after it.
func TestListingResumesAfterTokenDeleted(t *testing.T) {
	ctx := context.Background()
	p := newListPlugin(t)
	var vols []string
	for i := range 5 {
		vols = append(vols, mustVolume(t, p, fmt.Sprintf("v%d", i)))
	}
	slices.Sort(vols)
	first, err := p.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vols[2]}); err != nil {
		t.Fatal(err)
	}
	rest, err := p.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 10, StartingToken: asSent(t, first).GetNextToken()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range asSent(t, rest).GetEntries() {
		got = append(got, e.GetVolume().GetVolumeId())
	}
	if !slices.Equal(got, vols[3:]) {
		t.Fatalf("after the token's volume was deleted: %v, want %v", got, vols[3:])
	}
}

// asSent is resp as a client decodes it: the entries are raw bytes
// until then.
func asSent[M proto.Message](t *testing.T, resp M) M {
	t.Helper()
	wire, err := proto.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	out := resp.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(wire, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mountCapability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// TestResponseLogShowsListEntries: a list response logged at -v 5 shows
// its entries, though the driver sends them as raw bytes.
func TestResponseLogShowsListEntries(t *testing.T) {
	p := newListPlugin(t)
	id := mustVolume(t, p, "logged")
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(5), ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	_, err := logRequests(ctx, &csi.ListVolumesRequest{}, &grpc.UnaryServerInfo{FullMethod: "/csi.v1.Controller/ListVolumes"},
		func(ctx context.Context, req any) (any, error) {
			return p.ListVolumes(ctx, req.(*csi.ListVolumesRequest))
		})
	if err != nil {
		t.Fatal(err)
	}
	if log := logger.GetSink().(ktesting.Underlier).GetBuffer().String(); !strings.Contains(log, id) {
		t.Errorf("the response log does not name volume %s:\n%s", id, log)
	}
}
