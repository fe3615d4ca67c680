package plugin_test

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/world"
)

// regionalWorld: every volume in two zones of its region
// (volumes.replicas: 2); zone-c holds 2Gi so that room is counted in both
// zones; node-b and node-c are nodes of zone-b and zone-c beside the
// driver's own node-1 in zone-a.
const regionalWorld = `volumes: {replicas: 2}
nodes:
- {id: node-b, zone: zone-b}
- {id: node-c, zone: zone-c}
regions:
- name: region-1
  zones: [{name: zone-a}, {name: zone-b}, {name: zone-c, capacity: 2Gi}]
- name: region-2
  zones: [{name: zone-d}, {name: zone-e}]
`

// rzone is a segment of regionalWorld.
func rzone(z string) *csi.Topology {
	r := "region-1"
	if z == "zone-d" || z == "zone-e" {
		r = "region-2"
	}
	return &csi.Topology{Segments: map[string]string{world.DefaultRegionKey: r, world.DefaultZoneKey: z}}
}

func rzones(names ...string) []*csi.Topology {
	out := make([]*csi.Topology, len(names))
	for i, n := range names {
		out[i] = rzone(n)
	}
	return out
}

// TestRegionalPlacement: a new volume is in the first zone placement
// chooses and a second zone of its region, which may lie outside the
// requisite (TopologyRequirement, x > n: the SP "MAY choose the remaining
// x-n unique topologies from the list of all possible topologies"):
// requisite and preferred zones first, then the region in file order,
// never a zone that is down or full.
func TestRegionalPlacement(t *testing.T) {
	c, d := regionalClient(t)
	snapC := c.mustCreateSnapshot("snap-c", c.mustCreateVolume(drivertest.VolumeRequest("src-c", mib, &csi.TopologyRequirement{Requisite: rzones("zone-c")})).GetVolumeId(),
		&csi.TopologyRequirement{Requisite: rzones("zone-c")})
	regional := c.mustCreateVolume(drivertest.VolumeRequest("regional-b", mib, &csi.TopologyRequirement{Requisite: rzones("zone-b")}))
	tests := []struct {
		name   string
		req    *csi.CreateVolumeRequest
		faults string
		want   []*csi.Topology
		code   codes.Code
	}{
		{"requisite of one zone", drivertest.VolumeRequest("v1", mib, &csi.TopologyRequirement{Requisite: rzones("zone-b")}), "", rzones("zone-b", "zone-a"), codes.OK},
		{"preferred order", drivertest.VolumeRequest("v2", mib, &csi.TopologyRequirement{Requisite: rzones("zone-a", "zone-b", "zone-c"), Preferred: rzones("zone-c", "zone-b")}), "", rzones("zone-c", "zone-b"), codes.OK},
		{"other region", drivertest.VolumeRequest("v3", mib, &csi.TopologyRequirement{Requisite: rzones("zone-e")}), "", rzones("zone-e", "zone-d"), codes.OK},
		{"no requirements", drivertest.VolumeRequest("v4", mib, nil), "", rzones("zone-a", "zone-b"), codes.OK},
		{"replica zone down", drivertest.VolumeRequest("v5", mib, &csi.TopologyRequirement{Requisite: rzones("zone-b")}), drivertest.OutageRule(world.DefaultZoneKey, "zone-a"), rzones("zone-b", "zone-c"), codes.OK},
		{"replica zone full", drivertest.VolumeRequest("v6", 3*gib, &csi.TopologyRequirement{Requisite: rzones("zone-b")}), drivertest.OutageRule(world.DefaultZoneKey, "zone-a"), nil, codes.ResourceExhausted},
		{"requisite zone full", drivertest.VolumeRequest("v7", 3*gib, &csi.TopologyRequirement{Requisite: rzones("zone-c")}), "", nil, codes.ResourceExhausted},
		{"no second zone up", drivertest.VolumeRequest("v8", mib, &csi.TopologyRequirement{Requisite: rzones("zone-d")}), drivertest.OutageRule(world.DefaultZoneKey, "zone-e"), nil, codes.ResourceExhausted},
		{"restore of a zonal snapshot", restoreIn("r1", snapC.GetSnapshotId(), rzones("zone-c")), "", rzones("zone-c", "zone-a"), codes.OK},
		{"clone in the source's replica zone", cloneRequest("k1", regional.GetVolumeId(), rzones("zone-a", "zone-c")), "", rzones("zone-a", "zone-b"), codes.OK},
		{"clone outside the source's zones", cloneRequest("k2", regional.GetVolumeId(), rzones("zone-c")), "", nil, codes.ResourceExhausted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d.SetFaults(t, orNoRules(tc.faults))
			defer d.SetFaults(t, drivertest.NoRules)
			resp, err := c.CreateVolume(context.Background(), tc.req)
			if codeOf(err) != tc.code {
				t.Fatalf("CreateVolume = %v, want %v", err, tc.code)
			}
			if got := resp.GetVolume().GetAccessibleTopology(); err == nil && !sameTopology(got, tc.want) {
				t.Fatalf("accessible_topology = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRegionalCapacity: a volume's bytes count in both its zones, and
// GetCapacity of a zone reports no more than a second zone of its region
// holds, so that its limit is what CreateVolume there takes.
func TestRegionalCapacity(t *testing.T) {
	c, _ := regionalClient(t)
	c.mustCreateVolume(drivertest.VolumeRequest("in-c", gib, &csi.TopologyRequirement{Requisite: rzones("zone-a", "zone-c"), Preferred: rzones("zone-a", "zone-c")}))
	if got := c.capacityOf(rzone("zone-c")); got != gib {
		t.Fatalf("GetCapacity(zone-c) = %d after a 1Gi replica there, want %d", got, gib)
	}
	// zone-a's volumes need a second zone: zone-b is unlimited, so
	// zone-a's room is its own.
	if got := c.capacityOf(rzone("zone-a")); got < 1<<40 {
		t.Fatalf("GetCapacity(zone-a) = %d, want zone-a's unlimited room", got)
	}
	if _, err := c.CreateVolume(context.Background(), drivertest.VolumeRequest("too-big", gib+1, &csi.TopologyRequirement{Requisite: rzones("zone-c")})); codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("CreateVolume of 1Gi+1 in zone-c with 1Gi left = %v, want RESOURCE_EXHAUSTED", err)
	}
	c.mustCreateVolume(drivertest.VolumeRequest("fits", gib, &csi.TopologyRequirement{Requisite: rzones("zone-c")}))
}

// TestRegionalPublishAndOutage: nodes of both zones publish a regional
// volume and a node of neither cannot; with one of its zones down the
// volume stays usable through the other (publish, stage, snapshot,
// clone; its health DEGRADED, not INACCESSIBLE), while what changes every replica (delete, expand) is
// UNAVAILABLE until the zone is back, as for a volume in one zone.
func TestRegionalPublishAndOutage(t *testing.T) {
	c, d := regionalClient(t)
	ctx := context.Background()
	vol := c.mustCreateVolume(drivertest.VolumeRequest("ab", mib, &csi.TopologyRequirement{Requisite: rzones("zone-a")}))
	if !sameTopology(vol.GetAccessibleTopology(), rzones("zone-a", "zone-b")) {
		t.Fatalf("accessible_topology = %v, want zone-a then zone-b", vol.GetAccessibleTopology())
	}
	id := vol.GetVolumeId()
	for node, want := range map[string]codes.Code{drivertest.NodeID: codes.OK, "node-b": codes.OK, "node-c": codes.FailedPrecondition} {
		if err := c.publish(id, node); codeOf(err) != want {
			t.Errorf("ControllerPublishVolume to %s = %v, want %v", node, err, want)
		}
		c.unpublish(id, node)
	}
	d.SetFaults(t, drivertest.OutageRule(world.DefaultZoneKey, "zone-b"))
	steps := []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"publish to node-1 of zone-a, which is up", func() error { return c.publish(id, drivertest.NodeID) }, codes.OK},
		{"publish to node-b of zone-b, which is down", func() error { return c.publish(id, "node-b") }, codes.Unavailable},
		{"stage on node-1", func() error { return c.stage(t, id) }, codes.OK},
		{"snapshot without requirements", errOf(c.CreateSnapshot, &csi.CreateSnapshotRequest{Name: "while-b-down", SourceVolumeId: id}), codes.OK},
		{"clone", errOf(c.CreateVolume, cloneRequest("clone-while-b-down", id, rzones("zone-a"))), codes.OK},
		{"health", func() error { return healthy(c, id) }, codes.FailedPrecondition},
		{"expand", errOf(c.ControllerExpandVolume, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * mib}}), codes.Unavailable},
	}
	for _, s := range steps {
		if err := s.call(); codeOf(err) != s.want {
			t.Errorf("%s with zone-b down = %v, want %v", s.name, err, s.want)
		}
	}
	other := c.mustCreateVolume(drivertest.VolumeRequest("cd", mib, &csi.TopologyRequirement{Requisite: rzones("zone-c")}))
	d.SetFaults(t, drivertest.OutageRule(world.DefaultZoneKey, "zone-a"))
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: other.GetVolumeId()}); codeOf(err) != codes.Unavailable {
		t.Errorf("DeleteVolume of a volume in zone-c and zone-a with zone-a down = %v, want UNAVAILABLE: nothing is deleted in a zone that is down", err)
	}
	d.SetFaults(t, drivertest.OutageRule(world.DefaultRegionKey, "region-1"))
	if _, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "all-down", SourceVolumeId: id}); codeOf(err) != codes.Unavailable {
		t.Errorf("CreateSnapshot with every zone of the volume down = %v, want UNAVAILABLE", err)
	}
	if h, err := c.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id}); err != nil || len(h.GetVolumeHealth().GetHealthStatuses()) != 1 ||
		h.GetVolumeHealth().GetHealthStatuses()[0].GetStatus() != csi.VolumeHealthErrorType_INACCESSIBLE {
		t.Errorf("ControllerGetVolumeHealth with every zone of the volume down = %v, %v; want INACCESSIBLE", h, err)
	}
}

// TestRegionalIdempotency: a repeated CreateVolume is answered with the
// existing volume when any of its zones is in the requisite ("accessible
// from accessibility_requirements" means from at least one requisite
// topology), and ALREADY_EXISTS when none is.
func TestRegionalIdempotency(t *testing.T) {
	c, _ := regionalClient(t)
	c.mustCreateVolume(drivertest.VolumeRequest("same", mib, &csi.TopologyRequirement{Requisite: rzones("zone-b")}))
	if _, err := c.CreateVolume(context.Background(), drivertest.VolumeRequest("same", mib, &csi.TopologyRequirement{Requisite: rzones("zone-a")})); err != nil {
		t.Errorf("repeat with the replica's zone as requisite = %v, want OK", err)
	}
	if _, err := c.CreateVolume(context.Background(), drivertest.VolumeRequest("same", mib, &csi.TopologyRequirement{Requisite: rzones("zone-c")})); codeOf(err) != codes.AlreadyExists {
		t.Errorf("repeat with a requisite outside both zones = %v, want ALREADY_EXISTS", err)
	}
}

func regionalClient(t *testing.T) (*client, *drivertest.Driver) {
	t.Helper()
	d := drivertest.Start(t, drivertest.Options{World: regionalWorld, Faults: drivertest.NoRules})
	return newCSIClient(t, d), d
}

func orNoRules(rules string) string {
	if rules == "" {
		return drivertest.NoRules
	}
	return rules
}

func restoreIn(name, snap string, requisite []*csi.Topology) *csi.CreateVolumeRequest {
	r := drivertest.VolumeRequest(name, mib, &csi.TopologyRequirement{Requisite: requisite})
	r.VolumeContentSource = drivertest.FromSnapshot(snap)
	return r
}

func cloneRequest(name, src string, requisite []*csi.Topology) *csi.CreateVolumeRequest {
	r := drivertest.VolumeRequest(name, mib, &csi.TopologyRequirement{Requisite: requisite})
	r.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src}}}
	return r
}

func (c *client) capacityOf(seg *csi.Topology) int64 {
	c.t.Helper()
	resp, err := c.GetCapacity(context.Background(), &csi.GetCapacityRequest{AccessibleTopology: seg, VolumeCapabilities: []*csi.VolumeCapability{drivertest.MountCapability()}})
	if err != nil {
		c.t.Fatalf("GetCapacity(%v): %v", seg, err)
	}
	return resp.GetAvailableCapacity()
}

func (c *client) publish(id, node string) error {
	_, err := c.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: node, VolumeCapability: drivertest.MountCapability()})
	return err
}

func (c *client) unpublish(id, node string) {
	c.t.Helper()
	if _, err := c.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: node}); err != nil {
		c.t.Fatalf("ControllerUnpublishVolume %s from %s: %v", id, node, err)
	}
}

// stage stages volume id on the driver's node and unstages it when the
// test ends.
func (c *client) stage(t *testing.T, id string) error {
	path := t.TempDir()
	_, err := c.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: path, VolumeCapability: drivertest.MountCapability()})
	if err == nil {
		t.Cleanup(func() {
			if _, err := c.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: path}); err != nil {
				t.Errorf("NodeUnstageVolume %s: %v", id, err)
			}
		})
	}
	return err
}

// healthy is nil when ControllerGetVolumeHealth reports no adverse
// condition; FAILED_PRECONDITION when it reports exactly DEGRADED (a
// regional volume with a zone down, still usable); UNAVAILABLE for
// anything else. ControllerListVolumeHealth must list the same entries.
func healthy(c *client, id string) error {
	resp, err := c.ControllerGetVolumeHealth(context.Background(), &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
	if err != nil {
		return err
	}
	list, err := c.ControllerListVolumeHealth(context.Background(), &csi.ControllerListVolumeHealthRequest{})
	if err != nil {
		return err
	}
	entries := resp.GetVolumeHealth().GetHealthStatuses()
	listed := slices.ContainsFunc(list.GetEntries(), func(h *csi.VolumeHealth) bool { return h.GetVolumeId() == id })
	switch {
	case len(entries) == 0 && !listed:
		return nil
	case len(entries) == 1 && listed && entries[0].GetStatus() == csi.VolumeHealthErrorType_DEGRADED:
		return status.Errorf(codes.FailedPrecondition, "degraded: %v", entries)
	}
	return status.Errorf(codes.Unavailable, "health %v, listed %t", entries, listed)
}
