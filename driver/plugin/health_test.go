package plugin_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

const mib = 1 << 20

// outageClient serves a driver in testWorld whose fault file can be
// rewritten; its node-1 lives in zone-a.
func outageClient(t *testing.T) (*client, *drivertest.Driver) {
	t.Helper()
	d := drivertest.Start(t, drivertest.Options{World: testWorld, Faults: drivertest.NoRules})
	return newCSIClient(t, d), d
}

func (c *client) volumeIn(name, z string) string {
	c.t.Helper()
	return c.mustCreateVolume(drivertest.VolumeRequest(name, mib, drivertest.Requisite(zone(z)))).GetVolumeId()
}

// healthEntries renders a VolumeHealth's entries as "STATUS/Reason".
func healthEntries(h *csi.VolumeHealth) []string {
	var out []string
	for _, e := range h.GetHealthStatuses() {
		out = append(out, e.GetStatus().String()+"/"+e.GetReason())
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code codes.Code, inMessage string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), inMessage) {
		t.Errorf("%s: got %v, want %s with %q in the message", what, err, code, inMessage)
	}
}

// TestVolumeHealthBadInput: spec.md ControllerGetVolumeHealthRequest and
// NodeGetVolumeHealthRequest, volume_id "This field is REQUIRED"
// (INVALID_ARGUMENT, General Error Table "Missing required field"); "Volume
// does not exist", 5 NOT_FOUND (ControllerGetVolumeHealth Errors,
// NodeGetVolumeHealth Errors); "Invalid starting_token", 10 ABORTED
// (ControllerListVolumeHealth Errors); max_entries "MUST NOT be negative";
// the node's paths, "If not empty, it MUST be an absolute path".
func TestVolumeHealthBadInput(t *testing.T) {
	c, _ := outageClient(t)
	id := c.volumeIn("vol", "zone-a")
	unknown := "vol-00000000000000000000000000000000"
	runCodeCases(t, []codeCase{
		{"controller: no volume_id", errOf(c.ControllerGetVolumeHealth, &csi.ControllerGetVolumeHealthRequest{}), codes.InvalidArgument},
		{"controller: unknown volume", errOf(c.ControllerGetVolumeHealth, &csi.ControllerGetVolumeHealthRequest{VolumeId: unknown}), codes.NotFound},
		{"controller: malformed volume_id", errOf(c.ControllerGetVolumeHealth, &csi.ControllerGetVolumeHealthRequest{VolumeId: "../x"}), codes.InvalidArgument},
		{"list: foreign token", errOf(c.ControllerListVolumeHealth, &csi.ControllerListVolumeHealthRequest{StartingToken: "nope"}), codes.Aborted},
		{"list: negative max_entries", errOf(c.ControllerListVolumeHealth, &csi.ControllerListVolumeHealthRequest{MaxEntries: -1}), codes.InvalidArgument},
		{"node: no volume_id", errOf(c.NodeGetVolumeHealth, &csi.NodeGetVolumeHealthRequest{}), codes.InvalidArgument},
		{"node: unknown volume", errOf(c.NodeGetVolumeHealth, &csi.NodeGetVolumeHealthRequest{VolumeId: unknown}), codes.NotFound},
		{"node: relative publish path", errOf(c.NodeGetVolumeHealth, &csi.NodeGetVolumeHealthRequest{VolumeId: id, VolumePublishPath: "pods/x"}), codes.InvalidArgument},
		{"node: relative staging path", errOf(c.NodeGetVolumeHealth, &csi.NodeGetVolumeHealthRequest{VolumeId: id, StagingTargetPath: "staging"}), codes.InvalidArgument},
	})
}

// zoneB is the zone the outage tests take down.
var zoneB = drivertest.OutageRule(world.DefaultZoneKey, "zone-b")

// TestZoneOutage takes zone-b down and up again: while it is down its
// volumes are INACCESSIBLE to the controller and to the node (spec.md
// VolumeHealthErrorType INACCESSIBLE, "The volume is not accessible"),
// listed by ControllerListVolumeHealth while healthy ones are omitted
// ("The Plugin SHOULD omit volumes with no known adverse health
// condition"), nothing there is created, deleted or grown, placement
// moves to the other zones of a requisite, and a region-wide snapshot
// still restores into the region's other zones. After the outage every
// object is back and healthy.
func TestZoneOutage(t *testing.T) {
	c, d := outageClient(t)
	ctx := context.Background()
	volA, volB := c.volumeIn("in-a", "zone-a"), c.volumeIn("in-b", "zone-b")
	zonal := c.mustCreateSnapshot("zonal", volB, nil).GetSnapshotId()
	regional, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "regional", SourceVolumeId: volB,
		Parameters: map[string]string{plugin.ParamSnapshotScope: "region"}, AccessibilityRequirements: drivertest.Requisite(zone("zone-b"))})
	if err != nil {
		t.Fatal(err)
	}
	d.SetFaults(t, zoneB)

	health := func(id string) []string {
		resp, err := c.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
		if err != nil {
			t.Fatalf("ControllerGetVolumeHealth %s: %v", id, err)
		}
		return healthEntries(resp.GetVolumeHealth())
	}
	nodeHealth := func(id string) []string {
		resp, err := c.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id})
		if err != nil {
			t.Fatalf("NodeGetVolumeHealth %s: %v", id, err)
		}
		return healthEntries(resp.GetVolumeHealth())
	}
	down := []string{"INACCESSIBLE/" + plugin.ReasonZoneDown}
	if got := health(volB); !slices.Equal(got, down) {
		t.Errorf("controller health of the volume in zone-b = %v, want %v", got, down)
	}
	if got := nodeHealth(volB); !slices.Equal(got, down) {
		t.Errorf("node health of the volume in zone-b = %v, want %v", got, down)
	}
	if got, got2 := health(volA), nodeHealth(volA); got != nil || got2 != nil {
		t.Errorf("health of the volume in zone-a = %v (controller), %v (node), want none", got, got2)
	}
	list, err := c.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{})
	if err != nil || len(list.GetEntries()) != 1 || list.GetEntries()[0].GetVolumeId() != volB {
		t.Errorf("ControllerListVolumeHealth = %v, %v; want the volume in zone-b alone", list, err)
	}

	checkZoneBDown(t, c, volA, volB, zonal, regional.GetSnapshot().GetSnapshotId())

	d.SetFaults(t, drivertest.NoRules)
	if got, got2 := health(volB), nodeHealth(volB); got != nil || got2 != nil {
		t.Errorf("after the outage, health of the volume in zone-b = %v (controller), %v (node), want none", got, got2)
	}
	if r, err := c.restore("from-zonal", zonal, nil); err != nil {
		t.Errorf("restore of the zonal snapshot after the outage: %v", err)
	} else if !sameTopology(r.GetVolume().GetAccessibleTopology(), zones("zone-b")) {
		t.Errorf("restore of the zonal snapshot landed in %v, want zone-b", r.GetVolume().GetAccessibleTopology())
	}
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: volB}); err != nil {
		t.Errorf("DeleteVolume after the outage: %v", err)
	}
}

// checkZoneBDown checks what TestZoneOutage expects while zone-b is down:
// nothing new there, the other zones of a requisite used instead, the
// zonal snapshot not restorable, the region-wide one restorable elsewhere,
// and nothing of zone-b deleted or grown.
func checkZoneBDown(t *testing.T, c *client, volA, volB, zonal, regional string) {
	t.Helper()
	ctx := context.Background()
	_, err := c.CreateVolume(ctx, drivertest.VolumeRequest("only-b", mib, drivertest.Requisite(zone("zone-b"))))
	wantCode(t, "CreateVolume needing zone-b", err, codes.ResourceExhausted, "region-1/zone-b")
	if v := c.mustCreateVolume(drivertest.VolumeRequest("b-or-c", mib, drivertest.Requisite(zone("zone-b"), zone("zone-c")))); !sameTopology(v.GetAccessibleTopology(), zones("zone-c")) {
		t.Errorf("CreateVolume in [zone-b zone-c] landed in %v, want zone-c", v.GetAccessibleTopology())
	}
	_, err = c.CreateSnapshot(ctx, drivertest.SnapshotRequest("snap-to-b", volA, drivertest.Requisite(zone("zone-b"))))
	wantCode(t, "CreateSnapshot needing zone-b", err, codes.ResourceExhausted, "region-1/zone-b")
	_, err = c.CreateSnapshot(ctx, drivertest.SnapshotRequest("snap-of-b", volB, nil))
	wantCode(t, "CreateSnapshot of the volume in zone-b", err, codes.Unavailable, "zone-b")
	_, err = c.restore("from-zonal", zonal, nil)
	wantCode(t, "restore of a snapshot whose copy is in zone-b", err, codes.ResourceExhausted, "region-1/zone-b")
	regionReq := drivertest.Requisite(drivertest.Segment(world.DefaultRegionKey, "region-1"))
	if r, err := c.restore("from-regional", regional, regionReq); err != nil {
		t.Errorf("restore of a region-wide snapshot while zone-b is down: %v", err)
	} else if slices.ContainsFunc(r.GetVolume().GetAccessibleTopology(), func(s *csi.Topology) bool { return sameTopology([]*csi.Topology{s}, zones("zone-b")) }) {
		t.Errorf("restore of a region-wide snapshot landed in zone-b, which is down")
	}
	_, err = c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: volB})
	wantCode(t, "DeleteVolume in zone-b", err, codes.Unavailable, "zone-b")
	_, err = c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: zonal})
	wantCode(t, "DeleteSnapshot with a copy in zone-b", err, codes.Unavailable, "zone-b")
	_, err = c.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: volB, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * mib}})
	wantCode(t, "ControllerExpandVolume in zone-b", err, codes.Unavailable, "zone-b")
	_, err = c.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: volB, NodeId: drivertest.NodeID, VolumeCapability: drivertest.MountCapability()})
	wantCode(t, "ControllerPublishVolume of the volume in zone-b", err, codes.Unavailable, "zone-b")
}

// restore creates a volume from a snapshot, placed by req.
func (c *client) restore(name, snap string, req *csi.TopologyRequirement) (*csi.CreateVolumeResponse, error) {
	r := drivertest.VolumeRequest(name, mib, req)
	r.VolumeContentSource = drivertest.FromSnapshot(snap)
	return c.CreateVolume(context.Background(), r)
}

// TestNodeZoneOutage takes down the node's own zone: its node calls that
// need the volume fail UNAVAILABLE (outage.go says why that code), its
// storage is STORAGE_UNREACHABLE (spec.md StorageHealthErrorType, "The
// storage backend is completely unreachable from this node") and the
// node's view of the volume agrees with the controller's.
func TestNodeZoneOutage(t *testing.T) {
	c, d := outageClient(t)
	ctx := context.Background()
	id := c.volumeIn("vol", "zone-a")
	d.SetFaults(t, drivertest.OutageRule(world.DefaultZoneKey, "zone-a"))
	staging := t.TempDir()
	_, err := c.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: drivertest.MountCapability()})
	wantCode(t, "NodeStageVolume in a zone that is down", err, codes.Unavailable, "zone-a")
	_, err = c.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: staging})
	wantCode(t, "NodeGetVolumeStats in a zone that is down", err, codes.Unavailable, "zone-a")
	storage, err := c.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{})
	if err != nil || len(storage.GetBackendHealth()) != 1 || storage.GetBackendHealth()[0].GetStatus() != csi.StorageHealthErrorType_STORAGE_UNREACHABLE {
		t.Errorf("NodeGetStorageHealth = %v, %v; want one STORAGE_UNREACHABLE entry", storage, err)
	}
	nh, err := c.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id, StagingTargetPath: staging})
	if got := healthEntries(nh.GetVolumeHealth()); err != nil || !slices.Equal(got, []string{"INACCESSIBLE/" + plugin.ReasonZoneDown}) {
		t.Errorf("NodeGetVolumeHealth = %v, %v; want INACCESSIBLE/%s", got, err, plugin.ReasonZoneDown)
	}
	d.SetFaults(t, drivertest.NoRules)
	if _, err := c.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: drivertest.MountCapability()}); err != nil {
		t.Errorf("NodeStageVolume after the outage: %v", err)
	}
	if _, err := c.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Errorf("NodeUnstageVolume: %v", err)
	}
	if storage, err := c.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{}); err != nil || len(storage.GetBackendHealth()) != 0 {
		t.Errorf("NodeGetStorageHealth after the outage = %v, %v; want no entries", storage, err)
	}
}

// TestListVolumeHealthPages walks ControllerListVolumeHealth with
// max_entries: no page holds more ("the Plugin MUST NOT return more
// entries than this number"), next_token is set while more follow ("the
// Plugin MUST set next_token"), and the walk meets each unhealthy volume
// exactly once.
func TestListVolumeHealthPages(t *testing.T) {
	c, d := outageClient(t)
	ctx := context.Background()
	var want []string
	for i := range 5 {
		want = append(want, c.volumeIn(fmt.Sprintf("b-%d", i), "zone-b"))
		c.volumeIn(fmt.Sprintf("a-%d", i), "zone-a")
	}
	slices.Sort(want)
	d.SetFaults(t, zoneB)
	for _, max := range []int32{0, 1, 2, 5, 7} {
		var got []string
		token, pages := "", 0
		for {
			resp, err := c.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{MaxEntries: max, StartingToken: token})
			if err != nil {
				t.Fatalf("max_entries %d, page %d: %v", max, pages, err)
			}
			if max > 0 && int32(len(resp.GetEntries())) > max {
				t.Errorf("max_entries %d: page %d holds %d entries", max, pages, len(resp.GetEntries()))
			}
			for _, e := range resp.GetEntries() {
				got = append(got, e.GetVolumeId())
			}
			pages++
			if token = resp.GetNextToken(); token == "" || pages > 10 {
				break
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("max_entries %d: walked %v, want each volume of zone-b once: %v", max, got, want)
		}
	}
}

// TestHealthCapabilities: each health capability is reported unless
// switched off, and a switched-off RPC is UNIMPLEMENTED (spec.md General
// Error Table, "Call not implemented ... disabled in the Plugin's current
// mode of operation"). LIST_VOLUME_HEALTH goes with GET_VOLUME_HEALTH
// ("A plugin which supports the LIST_VOLUME_HEALTH capability MUST also
// support the GET_VOLUME_HEALTH capability").
func TestHealthCapabilities(t *testing.T) {
	tests := []struct {
		disable       []string
		controller    []string
		node          []string
		unimplemented []string
	}{
		{nil, []string{"GET_VOLUME_HEALTH", "LIST_VOLUME_HEALTH"}, []string{"GET_VOLUME_HEALTH", "GET_STORAGE_HEALTH"}, nil},
		{[]string{plugin.CapListVolumeHealth}, []string{"GET_VOLUME_HEALTH"}, []string{"GET_VOLUME_HEALTH", "GET_STORAGE_HEALTH"}, []string{"ControllerListVolumeHealth"}},
		{[]string{plugin.CapVolumeHealth}, nil, []string{"GET_STORAGE_HEALTH"}, []string{"ControllerGetVolumeHealth", "ControllerListVolumeHealth", "NodeGetVolumeHealth"}},
		{[]string{plugin.CapStorageHealth}, []string{"GET_VOLUME_HEALTH", "LIST_VOLUME_HEALTH"}, []string{"GET_VOLUME_HEALTH"}, []string{"NodeGetStorageHealth"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.disable), func(t *testing.T) {
			d := drivertest.Start(t, drivertest.Options{Config: func(c *plugin.Config) {
				if err := c.DisableCapabilities(tt.disable); err != nil {
					t.Fatal(err)
				}
			}})
			c := newCSIClient(t, d)
			ctx := context.Background()
			id := c.volumeIn("vol", "zone-a")
			cc, err := c.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			nc, err := c.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var gotC, gotN []string
			for _, cp := range cc.GetCapabilities() {
				if name := cp.GetRpc().GetType().String(); strings.Contains(name, "HEALTH") {
					gotC = append(gotC, name)
				}
			}
			for _, cp := range nc.GetCapabilities() {
				if name := cp.GetRpc().GetType().String(); strings.Contains(name, "HEALTH") {
					gotN = append(gotN, name)
				}
			}
			if !slices.Equal(gotC, tt.controller) || !slices.Equal(gotN, tt.node) {
				t.Errorf("health capabilities: controller %v, node %v; want %v, %v", gotC, gotN, tt.controller, tt.node)
			}
			calls := map[string]error{}
			_, calls["ControllerGetVolumeHealth"] = c.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
			_, calls["ControllerListVolumeHealth"] = c.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{})
			_, calls["NodeGetVolumeHealth"] = c.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: id})
			_, calls["NodeGetStorageHealth"] = c.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{})
			for rpc, err := range calls {
				if want := slices.Contains(tt.unimplemented, rpc); (status.Code(err) == codes.Unimplemented) != want || !want && err != nil {
					t.Errorf("%s: %v, want UNIMPLEMENTED %v", rpc, err, want)
				}
			}
		})
	}
}

// zoneCapacity is GetCapacity's answer for zone z.
func (c *client) zoneCapacity(z string) *csi.GetCapacityResponse {
	c.t.Helper()
	resp, err := c.GetCapacity(context.Background(), &csi.GetCapacityRequest{AccessibleTopology: zone(z),
		VolumeCapabilities: []*csi.VolumeCapability{drivertest.MountCapability()}})
	if err != nil {
		c.t.Fatalf("GetCapacity of %s: %v", z, err)
	}
	return resp
}

// TestGetCapacityOfDownZone: a zone that is down provisions nothing
// (CreateVolume there is RESOURCE_EXHAUSTED, outage.go), so GetCapacity
// reports none: available_capacity is "The available capacity ... that
// can be used to provision volumes", maximum_volume_size "The largest
// size that may be used in a CreateVolumeRequest.capacity_range.
// required_bytes field" (GetCapacityResponse). Otherwise a CO publishing
// CSIStorageCapacity keeps scheduling claims into the zone. The other
// zones keep their capacity, and the zone's comes back with it.
func TestGetCapacityOfDownZone(t *testing.T) {
	c, d := outageClient(t)
	before := c.zoneCapacity("zone-b")
	if before.GetAvailableCapacity() == 0 {
		t.Fatalf("zone-b reports no capacity before the outage: %v", before)
	}
	d.SetFaults(t, zoneB)
	if got := c.zoneCapacity("zone-b"); got.GetAvailableCapacity() != 0 || got.GetMaximumVolumeSize() != nil {
		t.Errorf("GetCapacity of zone-b while it is down = %v, want available_capacity 0 and no maximum_volume_size", got)
	}
	if got := c.zoneCapacity("zone-a"); got.GetAvailableCapacity() != before.GetAvailableCapacity() {
		t.Errorf("GetCapacity of zone-a while zone-b is down = %v, want %d as zone-b had", got, before.GetAvailableCapacity())
	}
	d.SetFaults(t, drivertest.NoRules)
	if got := c.zoneCapacity("zone-b"); got.GetAvailableCapacity() != before.GetAvailableCapacity() {
		t.Errorf("GetCapacity of zone-b after the outage = %v, want %d again", got, before.GetAvailableCapacity())
	}
}

// TestOutageCloneAndRestoreReadNothing: nothing in a zone that is down is
// read (outage.go). A clone of a volume there is UNAVAILABLE, and a
// restore of a snapshot whose only copy is there RESOURCE_EXHAUSTED
// (spec.md CreateVolume Errors, "Unable to provision in
// accessible_topology"), both decided before any data is copied. The test
// removes the snapshot's archive and the volume's data first, so a driver
// that read them would fail another way (INTERNAL) or copy nothing into a
// volume it then refuses to place.
func TestOutageCloneAndRestoreReadNothing(t *testing.T) {
	c, d := outageClient(t)
	volB := c.volumeIn("in-b", "zone-b")
	zonal := c.mustCreateSnapshot("zonal", volB, nil).GetSnapshotId()
	d.SetFaults(t, zoneB)
	hideData(t, d, "snapshots", zonal+".tar")
	hideData(t, d, "volumes", volB)

	_, err := c.restore("from-zonal", zonal, nil)
	wantCode(t, "restore of a snapshot whose only copy is in zone-b", err, codes.ResourceExhausted, "zone-b")
	clone := drivertest.VolumeRequest("clone-of-b", mib, nil)
	clone.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: volB}}}
	_, err = c.CreateVolume(context.Background(), clone)
	wantCode(t, "clone of the volume in zone-b", err, codes.Unavailable, "zone-b")
}

// TestOutageModifyChangesNothing: nothing in a zone that is down changes
// (outage.go), so ControllerModifyVolume there is UNAVAILABLE, as
// ControllerExpandVolume is, and so is a CreateVolume retried with new
// mutable_parameters for a volume there; "The SP MUST NOT have applied any
// modification to the volume as part of this specific call"
// (ControllerModifyVolume Errors). Back up, both succeed.
func TestOutageModifyChangesNothing(t *testing.T) {
	c, d := outageClient(t)
	volB := c.volumeIn("in-b", "zone-b")
	d.SetFaults(t, zoneB)
	wantCode(t, "ControllerModifyVolume in zone-b", c.modify(volB, tier(plugin.TierPremium)), codes.Unavailable, "zone-b")
	retry := drivertest.VolumeRequest("in-b", mib, drivertest.Requisite(zone("zone-b")))
	retry.MutableParameters = tier(plugin.TierExtreme)
	_, err := c.CreateVolume(context.Background(), retry)
	wantCode(t, "CreateVolume retried with new mutable_parameters in zone-b", err, codes.Unavailable, "zone-b")
	if got := c.currentTier(volB); got != plugin.TierStandard {
		t.Fatalf("volume in zone-b is tier %q after refused modifications while down, want %s", got, plugin.TierStandard)
	}
	// Asking for what the volume already is changes nothing: OK.
	if _, err := c.CreateVolume(context.Background(), drivertest.VolumeRequest("in-b", mib, drivertest.Requisite(zone("zone-b")))); err != nil {
		t.Errorf("CreateVolume retried unchanged in zone-b: %v, want OK", err)
	}

	d.SetFaults(t, drivertest.NoRules)
	if err := c.modify(volB, tier(plugin.TierPremium)); err != nil {
		t.Fatalf("ControllerModifyVolume after the outage: %v", err)
	}
	if _, err := c.CreateVolume(context.Background(), retry); err != nil {
		t.Fatalf("CreateVolume retried with new mutable_parameters after the outage: %v", err)
	}
	if got := c.currentTier(volB); got != plugin.TierExtreme {
		t.Fatalf("volume in zone-b is tier %q, want %s", got, plugin.TierExtreme)
	}
}
