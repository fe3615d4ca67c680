package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

// TestSnapshotPlacement covers where a snapshot is usable from: the source
// volume's zone by default, widened by the class parameters, narrowed by
// accessibility_requirements.
func TestSnapshotPlacement(t *testing.T) {
	c := newClient(t, "")
	src := c.mustCreateVolume(drivertest.VolumeRequest("placement-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-b")}))
	tests := []struct {
		name   string
		params map[string]string
		req    *csi.TopologyRequirement
		want   []*csi.Topology
	}{
		{"default: the source volume's zone", nil, nil, zones("zone-b")},
		{"region scope", map[string]string{plugin.ParamSnapshotScope: "region"}, nil, []*csi.Topology{region("region-1")}},
		{"two copies: source zone then its region", map[string]string{plugin.ParamSnapshotCopies: "2"}, nil, zones("zone-b", "zone-a")},
		{"requisite elsewhere: copied there", nil, &csi.TopologyRequirement{Requisite: zones("zone-d")}, zones("zone-d")},
		{"preferred first", nil, &csi.TopologyRequirement{Requisite: zones("zone-a", "zone-d"), Preferred: zones("zone-d")}, zones("zone-d")},
		{"copies within requisite", map[string]string{plugin.ParamSnapshotCopies: "3"}, &csi.TopologyRequirement{Requisite: zones("zone-a", "zone-b")}, zones("zone-a", "zone-b")},
		{"region scope with a whole-region requisite", map[string]string{plugin.ParamSnapshotScope: "region"}, &csi.TopologyRequirement{Requisite: []*csi.Topology{region("region-2")}}, []*csi.Topology{region("region-2")}},
		// TopologyRequirement x > n: the SP "MAY choose the remaining x-n
		// unique topologies", so a copy in the requisite zone makes the
		// snapshot usable from all of its region.
		{"region scope with a requisite covering part of a region", map[string]string{plugin.ParamSnapshotScope: "region"}, &csi.TopologyRequirement{Requisite: zones("zone-d", "zone-c"), Preferred: zones("zone-c")}, []*csi.Topology{region("region-1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{
				Name: "placement-" + strings.ReplaceAll(tt.name, " ", "-"), SourceVolumeId: src.GetVolumeId(), Parameters: tt.params, AccessibilityRequirements: tt.req,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetSnapshot().GetAccessibleTopology(); !sameTopology(got, tt.want) {
				t.Fatalf("accessible_topology = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSnapshotOtherSource: the same name with another source volume is
// ALREADY_EXISTS (spec.md CreateSnapshot Errors: "incompatible with the
// specified volume_id"), whatever the requirements; name reuse with other
// requirements is the table of TestIdempotencyTable.
func TestSnapshotOtherSource(t *testing.T) {
	c := newClient(t, "")
	a := c.mustCreateVolume(drivertest.VolumeRequest("idem-a", gib, nil))
	b := c.mustCreateVolume(drivertest.VolumeRequest("idem-b", gib, nil))
	inA := &csi.TopologyRequirement{Requisite: zones("zone-a")}
	c.mustCreateSnapshot("idem", a.GetVolumeId(), inA)
	for _, req := range []*csi.TopologyRequirement{inA, nil} {
		_, err := c.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "idem", SourceVolumeId: b.GetVolumeId(), AccessibilityRequirements: req})
		if codeOf(err) != codes.AlreadyExists {
			t.Fatalf("CreateSnapshot of another source, requirements %v: %v, want AlreadyExists", req, err)
		}
	}
}

// TestBadInput: malformed requests get INVALID_ARGUMENT or NOT_FOUND with
// a message naming the problem, and never a path outside the data.
func TestBadInput(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	vol := c.mustCreateVolume(drivertest.VolumeRequest("bad-input-source", gib, nil))
	many := make([]*csi.Topology, world.MaxSegmentsPerRequirement+1)
	for i := range many {
		many[i] = zone("zone-a")
	}
	tests := []struct {
		name     string
		call     func() error
		wantCode codes.Code
		wantMsg  string
	}{
		{"unknown topology key", errOf(c.CreateVolume, drivertest.VolumeRequest("bad-1", gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{"example.com/rack": "r1"}}}})), codes.InvalidArgument, "unknown topology key"},
		{"empty segment", errOf(c.CreateVolume, drivertest.VolumeRequest("bad-2", gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{{}}})), codes.InvalidArgument, "requisite[0]"},
		{"malformed value", errOf(c.CreateVolume, drivertest.VolumeRequest("bad-3", gib, &csi.TopologyRequirement{Preferred: []*csi.Topology{{Segments: map[string]string{world.DefaultZoneKey: "a b/c"}}}})), codes.InvalidArgument, "preferred[0]"},
		{"oversized requirement", errOf(c.CreateVolume, drivertest.VolumeRequest("bad-5", gib, &csi.TopologyRequirement{Requisite: many})), codes.InvalidArgument, "more than"},
		{"volume ID escaping the data directory", errOf(c.DeleteVolume, &csi.DeleteVolumeRequest{VolumeId: "../../etc"}), codes.InvalidArgument, "malformed"},
		{"snapshot ID escaping the data directory", errOf(c.CreateVolume, restoreRequest("bad-6", "../state")), codes.InvalidArgument, "malformed"},
		{"unknown snapshot", errOf(c.GetSnapshot, &csi.GetSnapshotRequest{SnapshotId: "zps-unknown"}), codes.NotFound, "does not exist"},
		{"unknown snapshot parameter", errOf(c.CreateSnapshot, &csi.CreateSnapshotRequest{Name: "bad-7", SourceVolumeId: vol.GetVolumeId(), Parameters: map[string]string{plugin.DefaultName + "/copies": "2"}}), codes.InvalidArgument, "unknown parameter"},
		{"unclean target path", errOf(c.NodePublishVolume, &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: "/tmp/../etc/x",
			VolumeCapability: drivertest.MountCapability()}), codes.InvalidArgument, "absolute, clean"},
		{"stats for a path the volume is not mounted at", errOf(c.NodeGetVolumeStats, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: "/nonexistent"}), codes.NotFound, "not staged or published"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if codeOf(err) != tt.wantCode || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("got %v, want %v containing %q", err, tt.wantCode, tt.wantMsg)
			}
		})
	}
	vols, err := c.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil || len(vols.GetEntries()) != 1 {
		t.Fatalf("bad requests created volumes: %v, %v", vols, err)
	}
}

func restoreRequest(name, snapshotID string) *csi.CreateVolumeRequest {
	r := drivertest.VolumeRequest(name, gib, nil)
	r.VolumeContentSource = drivertest.FromSnapshot(snapshotID)
	return r
}

// TestAttachLimit: ControllerPublish beyond max_volumes_per_node is
// RESOURCE_EXHAUSTED (CSI: ControllerPublishVolume Errors "Max volumes
// attached"); unpublishing one lets the next succeed.
func TestAttachLimit(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	info, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	limit := info.GetMaxVolumesPerNode()
	if limit != 3 {
		t.Fatalf("max_volumes_per_node = %d, want the configured 3", limit)
	}
	var ids []string
	publish := func(id string) error {
		_, err := c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: info.GetNodeId(),
			VolumeCapability: drivertest.MountCapability()})
		return err
	}
	for i := int64(0); i <= limit; i++ {
		v := c.mustCreateVolume(drivertest.VolumeRequest("limit-"+string(rune('a'+i)), gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{info.GetAccessibleTopology()}}))
		ids = append(ids, v.GetVolumeId())
	}
	for _, id := range ids[:limit] {
		if err := publish(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := publish(ids[limit]); codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("publishing volume %d of a limit of %d: %v, want ResourceExhausted", limit+1, limit, err)
	}
	if _, err := c.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: ids[0], NodeId: info.GetNodeId()}); err != nil {
		t.Fatal(err)
	}
	if err := publish(ids[limit]); err != nil {
		t.Fatalf("publishing after an unpublish: %v", err)
	}
}

// TestSnapshotWithoutRequirementsStaysInSourceZone: without
// accessibility_requirements a snapshot's first copy is in its source
// volume's zone (driver README, Snapshots). When that zone's quota is
// full the call is RESOURCE_EXHAUSTED (spec.md CreateSnapshot Errors:
// "Not enough resources to create snapshot"), whatever the class asks
// for, never a copy placed elsewhere; nothing is recorded, and the same
// request succeeds once the quota is freed.
func TestSnapshotWithoutRequirementsStaysInSourceZone(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	src := c.mustCreateVolume(drivertest.VolumeRequest("quota-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-c")}))
	fill := c.mustCreateSnapshot("quota-fill", src.GetVolumeId(), nil) // zone-c's snapshotQuota is 1
	if got := fill.GetAccessibleTopology(); !sameTopology(got, zones("zone-c")) {
		t.Fatalf("snapshot without requirements usable from %v, want its source's zone-c", got)
	}
	tests := []struct {
		name   string
		params map[string]string
	}{
		{"one copy", nil},
		{"region scope", map[string]string{plugin.ParamSnapshotScope: "region"}},
		{"two copies", map[string]string{plugin.ParamSnapshotCopies: "2"}},
		{"two region-wide copies", map[string]string{plugin.ParamSnapshotCopies: "2", plugin.ParamSnapshotScope: "region"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &csi.CreateSnapshotRequest{Name: "quota-" + strings.ReplaceAll(tt.name, " ", "-"), SourceVolumeId: src.GetVolumeId(), Parameters: tt.params}
			resp, err := c.CreateSnapshot(ctx, req)
			if codeOf(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "zone-c") {
				t.Fatalf("CreateSnapshot with zone-c's quota full: %v (usable from %v), want ResourceExhausted naming zone-c",
					err, resp.GetSnapshot().GetAccessibleTopology())
			}
		})
	}
	list, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil || len(list.GetEntries()) != 1 {
		t.Fatalf("ListSnapshots after refused requests: %d entries, %v; want only %s", len(list.GetEntries()), err, fill.GetSnapshotId())
	}
	if _, err := c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: fill.GetSnapshotId()}); err != nil {
		t.Fatal(err)
	}
	if got := c.mustCreateSnapshot("quota-one-copy", src.GetVolumeId(), nil).GetAccessibleTopology(); !sameTopology(got, zones("zone-c")) {
		t.Fatalf("snapshot after freeing zone-c's quota usable from %v, want zone-c", got)
	}
}

// TestGlobalSnapshotScope: snapshotScope=global returns no
// accessible_topology (CSI spec, Snapshot.accessible_topology: "If it is
// not specified, the CO MAY assume the snapshot is equally usable from all
// topologies in the cluster"), so restores may go to any zone, also in
// another region; a repeated call with its requisite returns it
// (idempotency); ListSnapshots and GetSnapshot agree.
func TestGlobalSnapshotScope(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	src := c.mustCreateVolume(drivertest.VolumeRequest("global-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")}))
	global := map[string]string{plugin.ParamSnapshotScope: "global"}
	tests := []struct {
		name string
		req  *csi.TopologyRequirement
		// restoreIn are zones a restore must succeed in.
		restoreIn []string
	}{
		{"without requirements", nil, []string{"zone-a", "zone-b", "zone-d"}},
		{"with a requisite in another region", &csi.TopologyRequirement{Requisite: zones("zone-d")}, []string{"zone-a", "zone-d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &csi.CreateSnapshotRequest{Name: "global-" + strings.ReplaceAll(tt.name, " ", "-"), SourceVolumeId: src.GetVolumeId(), Parameters: global, AccessibilityRequirements: tt.req}
			for attempt := 1; attempt <= 2; attempt++ {
				resp, err := c.CreateSnapshot(ctx, req)
				if err != nil {
					t.Fatalf("CreateSnapshot attempt %d: %v", attempt, err)
				}
				if got := resp.GetSnapshot().GetAccessibleTopology(); len(got) != 0 {
					t.Fatalf("attempt %d: accessible_topology = %v, want none for a global snapshot", attempt, got)
				}
			}
			got, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: mustSnapshotID(t, c, req)})
			if err != nil || len(got.GetEntries()) != 1 || len(got.GetEntries()[0].GetSnapshot().GetAccessibleTopology()) != 0 {
				t.Fatalf("ListSnapshots of a global snapshot: %v, %v; want one entry without accessible_topology", got, err)
			}
			for _, z := range tt.restoreIn {
				r := restoreRequest(req.GetName()+"-in-"+z, mustSnapshotID(t, c, req))
				r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: zones(z)}
				if vol := c.mustCreateVolume(r); !sameTopology(vol.GetAccessibleTopology(), zones(z)) {
					t.Fatalf("restore into %s is accessible from %v", z, vol.GetAccessibleTopology())
				}
			}
		})
	}
	bad := &csi.CreateSnapshotRequest{Name: "global-bad", SourceVolumeId: src.GetVolumeId(), Parameters: map[string]string{plugin.ParamSnapshotScope: "everywhere"}}
	if _, err := c.CreateSnapshot(ctx, bad); codeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "global") {
		t.Fatalf("snapshotScope=everywhere: %v, want InvalidArgument listing global", err)
	}
}

// mustSnapshotID repeats an idempotent CreateSnapshot for its ID.
func mustSnapshotID(t *testing.T, c *client, req *csi.CreateSnapshotRequest) string {
	t.Helper()
	resp, err := c.CreateSnapshot(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateSnapshot %s: %v", req.GetName(), err)
	}
	return resp.GetSnapshot().GetSnapshotId()
}
