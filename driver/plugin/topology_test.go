package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

// testWorld has an exhaustible zone (zone-c: 2Gi, one snapshot copy) and
// a second region, so placement, quota and restore rules can be observed.
var testWorld = drivertest.World("capacity: 2Gi, snapshotQuota: 1")

const gib = 1 << 30

type client struct {
	csi.ControllerClient
	csi.NodeClient
	t *testing.T
}

// newClient serves a driver in testWorld, with fault rules when given.
func newClient(t *testing.T, rules string) *client {
	t.Helper()
	return newClientIn(t, testWorld, rules)
}

// newClientIn serves a driver in the given world.
func newClientIn(t *testing.T, worldYAML, rules string) *client {
	t.Helper()
	d := drivertest.Start(t, drivertest.Options{World: worldYAML, Faults: rules, Config: maxVolumesPerNode(3)})
	return newCSIClient(t, d)
}

// newCSIClient is a controller and node client of d.
func newCSIClient(t *testing.T, d *drivertest.Driver) *client {
	t.Helper()
	conn := d.Conn(t)
	return &client{ControllerClient: csi.NewControllerClient(conn), NodeClient: csi.NewNodeClient(conn), t: t}
}

// maxVolumesPerNode sets the attach limit the node service reports.
func maxVolumesPerNode(n int64) func(*plugin.Config) {
	return func(c *plugin.Config) { c.MaxVolumesPerNode = n }
}

func zone(z string) *csi.Topology {
	r := "region-1"
	if z == "zone-d" {
		r = "region-2"
	}
	return &csi.Topology{Segments: map[string]string{world.DefaultRegionKey: r, world.DefaultZoneKey: z}}
}

// region is a segment naming a whole region.
func region(r string) *csi.Topology {
	return &csi.Topology{Segments: map[string]string{world.DefaultRegionKey: r}}
}

// zoneOnly is a segment under keys.omitRegion.
func zoneOnly(z string) *csi.Topology {
	return &csi.Topology{Segments: map[string]string{world.DefaultZoneKey: z}}
}

func zones(names ...string) []*csi.Topology {
	out := make([]*csi.Topology, len(names))
	for i, n := range names {
		out[i] = zone(n)
	}
	return out
}

func (c *client) mustCreateVolume(req *csi.CreateVolumeRequest) *csi.Volume {
	c.t.Helper()
	resp, err := c.CreateVolume(context.Background(), req)
	if err != nil {
		c.t.Fatalf("CreateVolume %s: %v", req.GetName(), err)
	}
	return resp.GetVolume()
}

func (c *client) mustCreateSnapshot(name, source string, req *csi.TopologyRequirement) *csi.Snapshot {
	c.t.Helper()
	resp, err := c.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: source, AccessibilityRequirements: req})
	if err != nil {
		c.t.Fatalf("CreateSnapshot %s: %v", name, err)
	}
	return resp.GetSnapshot()
}

// withinRequisite is the CSI rule for a topology-constrained object: every
// segment it is accessible from is one of the requisite segments.
func withinRequisite(got, requisite []*csi.Topology) error {
	if len(got) == 0 {
		return fmt.Errorf("no accessible_topology returned")
	}
	for _, g := range got {
		ok := false
		for _, r := range requisite {
			ok = ok || proto.Equal(g, r)
		}
		if !ok {
			return fmt.Errorf("accessible segment %v is not in requisite %v", g.GetSegments(), requisite)
		}
	}
	return nil
}

func sameTopology(a, b []*csi.Topology) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// TestCreateVolumeHonoursRequisite fails for a driver that ignores
// requisite or preferred (CSI: CreateVolumeRequest accessibility_requirements).
func TestCreateVolumeHonoursRequisite(t *testing.T) {
	c := newClient(t, "")
	tests := []struct {
		name string
		req  *csi.TopologyRequirement
		want *csi.Topology
	}{
		{"requisite only", &csi.TopologyRequirement{Requisite: zones("zone-b")}, zone("zone-b")},
		{"preferred first", &csi.TopologyRequirement{Requisite: zones("zone-a", "zone-b"), Preferred: zones("zone-b")}, zone("zone-b")},
		{"preferred outside requisite ignored", &csi.TopologyRequirement{Requisite: zones("zone-d"), Preferred: zones("zone-a")}, zone("zone-d")},
		{"region-wide requisite", &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{world.DefaultRegionKey: "region-2"}}}}, zone("zone-d")},
		{"full zone skipped for the next requisite", &csi.TopologyRequirement{Requisite: zones("zone-c", "zone-b"), Preferred: zones("zone-c")}, zone("zone-b")},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := int64(gib)
			if tt.name == "full zone skipped for the next requisite" {
				size = 3 * gib // zone-c holds 2Gi
			}
			vol := c.mustCreateVolume(drivertest.VolumeRequest(fmt.Sprintf("requisite-%d", i), size, tt.req))
			if !sameTopology(vol.GetAccessibleTopology(), []*csi.Topology{tt.want}) {
				t.Fatalf("accessible_topology = %v, want %v", vol.GetAccessibleTopology(), tt.want)
			}
			got, err := c.ControllerGetVolume(context.Background(), &csi.ControllerGetVolumeRequest{VolumeId: vol.GetVolumeId()})
			if err != nil || !sameTopology(got.GetVolume().GetAccessibleTopology(), vol.GetAccessibleTopology()) {
				t.Fatalf("ControllerGetVolume = %v, %v; want the topology CreateVolume returned", got, err)
			}
		})
	}
}

// TestSnapshotAccessibilityRequirements replaces upstream csi-sanity's
// test of the same name, which compares messages with gomega Equal: a
// snapshot requested with the node's topology as requisite and preferred
// is usable from exactly that topology (CSI: CreateSnapshotRequest
// accessibility_requirements; Snapshot accessible_topology).
func TestSnapshotAccessibilityRequirements(t *testing.T) {
	c := newClient(t, "")
	info, err := c.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	node := info.GetAccessibleTopology()
	vol := c.mustCreateVolume(drivertest.VolumeRequest("snap-topology-source", gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{node}}))
	snap := c.mustCreateSnapshot("snap-topology", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{node}, Preferred: []*csi.Topology{node}})
	if err := withinRequisite(snap.GetAccessibleTopology(), []*csi.Topology{node}); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotTopologyConsistent fails when accessible_topology differs
// between CreateSnapshot, ListSnapshots (by ID and unfiltered) and
// GetSnapshot, and is proven to by a fault that drops it from
// CreateSnapshot's response.
func TestSnapshotTopologyConsistent(t *testing.T) {
	const dropTopology = `
rules:
- name: drop-snapshot-topology
  match: {rpc: CreateSnapshot}
  action: {mutate: {clear: [snapshot.accessible_topology]}}
`
	for _, tt := range []struct {
		name, rules string
		wantErr     bool
	}{
		{"correct driver", "", false},
		{"driver dropping accessible_topology", dropTopology, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, tt.rules)
			vol := c.mustCreateVolume(drivertest.VolumeRequest("consistent-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")}))
			snap := c.mustCreateSnapshot("consistent", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: zones("zone-a", "zone-b"), Preferred: zones("zone-b")})
			err := checkSnapshotConsistent(c, snap)
			if (err != nil) != tt.wantErr {
				t.Fatalf("checkSnapshotConsistent = %v, want error %t", err, tt.wantErr)
			}
		})
	}
}

func checkSnapshotConsistent(c *client, snap *csi.Snapshot) error {
	ctx := context.Background()
	byID, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snap.GetSnapshotId()})
	if err != nil || len(byID.GetEntries()) != 1 {
		return fmt.Errorf("ListSnapshots by ID: %v, %d entries", err, len(byID.GetEntries()))
	}
	all, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil {
		return err
	}
	var listed *csi.Snapshot
	for _, e := range all.GetEntries() {
		if e.GetSnapshot().GetSnapshotId() == snap.GetSnapshotId() {
			listed = e.GetSnapshot()
		}
	}
	got, err := c.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snap.GetSnapshotId()})
	if err != nil {
		return err
	}
	for name, other := range map[string]*csi.Snapshot{"ListSnapshots by ID": byID.GetEntries()[0].GetSnapshot(), "ListSnapshots": listed, "GetSnapshot": got.GetSnapshot()} {
		if !sameTopology(other.GetAccessibleTopology(), snap.GetAccessibleTopology()) {
			return fmt.Errorf("%s returned accessible_topology %v, CreateSnapshot %v", name, other.GetAccessibleTopology(), snap.GetAccessibleTopology())
		}
	}
	if len(snap.GetAccessibleTopology()) == 0 {
		return fmt.Errorf("CreateSnapshot returned no accessible_topology although requisite was given")
	}
	return nil
}

func codeOf(err error) codes.Code { return status.Code(err) }

// TestResourceExhausted fails unless an exhausted zone yields
// RESOURCE_EXHAUSTED (CSI: CreateVolume Errors "Unable to provision in
// accessible_topology"; CreateSnapshot Errors "Not enough resources to
// create snapshot"), and the same request succeeds once room is made.
func TestResourceExhausted(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	inC := &csi.TopologyRequirement{Requisite: zones("zone-c")}
	vol := c.mustCreateVolume(drivertest.VolumeRequest("exhaust-1", 2*gib, inC))
	if _, err := c.CreateVolume(ctx, drivertest.VolumeRequest("exhaust-2", gib, inC)); codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("CreateVolume in a full zone: %v, want ResourceExhausted", err)
	}
	c.mustCreateSnapshot("exhaust-snap-1", vol.GetVolumeId(), inC)
	_, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "exhaust-snap-2", SourceVolumeId: vol.GetVolumeId(), AccessibilityRequirements: inC})
	if codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("CreateSnapshot beyond zone-c's quota: %v, want ResourceExhausted", err)
	}
	// Lift the condition: free the quota, then the same request succeeds.
	snaps, _ := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SourceVolumeId: vol.GetVolumeId()})
	for _, e := range snaps.GetEntries() {
		if _, err := c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: e.GetSnapshot().GetSnapshotId()}); err != nil {
			t.Fatal(err)
		}
	}
	c.mustCreateSnapshot("exhaust-snap-2", vol.GetVolumeId(), inC)
}

// TestRestoreStaysInSnapshotTopology fails when a volume restored from a
// snapshot is placed where the snapshot is not usable from.
func TestRestoreStaysInSnapshotTopology(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	src := c.mustCreateVolume(drivertest.VolumeRequest("restore-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")}))
	snap := c.mustCreateSnapshot("restore-snap", src.GetVolumeId(), &csi.TopologyRequirement{Requisite: zones("zone-a")})
	restore := func(name string, req *csi.TopologyRequirement) (*csi.CreateVolumeResponse, error) {
		r := drivertest.VolumeRequest(name, gib, req)
		r.VolumeContentSource = drivertest.FromSnapshot(snap.GetSnapshotId())
		return c.CreateVolume(ctx, r)
	}
	tests := []struct {
		name     string
		req      *csi.TopologyRequirement
		want     *csi.Topology
		wantCode codes.Code
	}{
		{"no requirements", nil, zone("zone-a"), codes.OK},
		{"requisite includes the snapshot's zone", &csi.TopologyRequirement{Requisite: zones("zone-b", "zone-a"), Preferred: zones("zone-b")}, zone("zone-a"), codes.OK},
		{"requisite outside the snapshot's zone", &csi.TopologyRequirement{Requisite: zones("zone-b", "zone-d")}, nil, codes.ResourceExhausted},
		{"requisite segments naming no zone skipped", &csi.TopologyRequirement{Requisite: []*csi.Topology{zone("zone-d"), zone("zone-a"), wrongRegion("zone-a")}}, zone("zone-a"), codes.OK},
		{"outside the snapshot's zone once no-zone segments are skipped", &csi.TopologyRequirement{Requisite: []*csi.Topology{zone("zone-b"), wrongRegion("zone-a")}}, nil, codes.ResourceExhausted},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := restore(fmt.Sprintf("restored-%d", i), tt.req)
			if codeOf(err) != tt.wantCode {
				t.Fatalf("CreateVolume from snapshot: %v, want %v", err, tt.wantCode)
			}
			if tt.want != nil && !sameTopology(resp.GetVolume().GetAccessibleTopology(), []*csi.Topology{tt.want}) {
				t.Fatalf("restored volume accessible from %v, want inside the snapshot's %v", resp.GetVolume().GetAccessibleTopology(), snap.GetAccessibleTopology())
			}
		})
	}
}

// TestWithinRequisiteCanFail proves the placement check catches a driver
// that ignores requisite.
func TestWithinRequisiteCanFail(t *testing.T) {
	if withinRequisite(zones("zone-a"), zones("zone-b")) == nil {
		t.Fatal("a volume in zone-a passed a requisite of zone-b")
	}
	if withinRequisite(nil, zones("zone-b")) == nil {
		t.Fatal("a missing accessible_topology passed")
	}
	if err := withinRequisite(zones("zone-b"), zones("zone-a", "zone-b")); err != nil {
		t.Fatal(err)
	}
}

// TestGetCapacityPerTopology: GetCapacity reports the free bytes of the
// zones accessible_topology selects (CSI: GetCapacityRequest
// accessible_topology), and a created volume is taken off them.
func TestGetCapacityPerTopology(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	capacity := func(seg *csi.Topology) int64 {
		t.Helper()
		resp, err := c.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: seg})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetAvailableCapacity()
	}
	if got := capacity(zone("zone-c")); got != 2*gib {
		t.Fatalf("zone-c capacity = %d, want %d", got, 2*gib)
	}
	c.mustCreateVolume(drivertest.VolumeRequest("capacity-1", gib, &csi.TopologyRequirement{Requisite: zones("zone-c")}))
	if got := capacity(zone("zone-c")); got != gib {
		t.Fatalf("zone-c capacity after a 1Gi volume = %d, want %d", got, gib)
	}
	if _, err := c.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: &csi.Topology{Segments: map[string]string{"example.com/x": "y"}}}); codeOf(err) != codes.InvalidArgument {
		t.Fatalf("GetCapacity with an unknown key: %v, want InvalidArgument", err)
	}
}

// wrongRegion is zone z's segment with the other region: well-formed, but
// naming no zone, as the external-provisioner's cross product of allowed
// values makes them.
func wrongRegion(z string) *csi.Topology {
	seg := zone(z)
	other := "region-2"
	if z == "zone-d" {
		other = "region-1"
	}
	seg.Segments[world.DefaultRegionKey] = other
	return seg
}

// TestRequisiteNamingNoZone: segments that name no zone are skipped, and
// a requisite left with none (a misspelt zone, a region the driver lacks,
// a cross product of two regions' values) is INVALID_ARGUMENT naming every
// segment exactly, and nothing is created. The reading (driver README,
// Errors): spec.md's General Error Table, "Invalid or unsupported field in
// the request ... has an invalid value", because "COs SHALL only specify
// topological accessibility information supported by the SP"
// (CreateSnapshotRequest.accessibility_requirements); the RESOURCE_EXHAUSTED
// rows apply only when the field "is valid" (CreateVolume Errors: "although
// the accessible_topology field is valid"; CreateSnapshot Errors: "the
// accessibility_requirements field is valid but ..."). INVALID_ARGUMENT is
// final for csi-snapshotter, so the VolumeSnapshot can be deleted, where
// RESOURCE_EXHAUSTED kept it being created forever.
func TestRequisiteNamingNoZone(t *testing.T) {
	c := newClient(t, "")
	ctx := context.Background()
	vol := c.mustCreateVolume(drivertest.VolumeRequest("no-zone-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")}))
	nowhere := &csi.TopologyRequirement{
		Requisite: []*csi.Topology{wrongRegion("zone-b"), zone("zone-x"), {Segments: map[string]string{world.DefaultRegionKey: "region-9"}}},
		Preferred: zones("zone-a"),
	}
	const named = "requisite [{topology.kubernetes.io/region=region-2,topology.kubernetes.io/zone=zone-b} " +
		"{topology.kubernetes.io/region=region-1,topology.kubernetes.io/zone=zone-x} {topology.kubernetes.io/region=region-9}] names no zone of this driver"
	if _, err := c.CreateVolume(ctx, drivertest.VolumeRequest("no-zone", gib, nowhere)); codeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), named) {
		t.Fatalf("CreateVolume with a requisite naming no zone: %v, want InvalidArgument naming %s", err, named)
	}
	_, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "no-zone", SourceVolumeId: vol.GetVolumeId(), AccessibilityRequirements: nowhere})
	if codeOf(err) != codes.InvalidArgument || !strings.Contains(err.Error(), named) {
		t.Fatalf("CreateSnapshot with a requisite naming no zone: %v, want InvalidArgument naming %s", err, named)
	}
	vols, _ := c.ListVolumes(ctx, &csi.ListVolumesRequest{})
	snaps, _ := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if len(vols.GetEntries()) != 1 || len(snaps.GetEntries()) != 0 {
		t.Fatalf("refused requests left %d volumes and %d snapshots, want 1 and 0", len(vols.GetEntries()), len(snaps.GetEntries()))
	}
	// Preferred segments naming no zone are only an unmet hint.
	hint := &csi.TopologyRequirement{Requisite: zones("zone-b"), Preferred: []*csi.Topology{wrongRegion("zone-b"), zone("zone-b")}}
	if got := c.mustCreateVolume(drivertest.VolumeRequest("no-zone-hint", gib, hint)).GetAccessibleTopology(); !sameTopology(got, zones("zone-b")) {
		t.Fatalf("volume accessible from %v, want zone-b", got)
	}
	if got := c.mustCreateSnapshot("no-zone-hint", vol.GetVolumeId(), hint).GetAccessibleTopology(); !sameTopology(got, zones("zone-b")) {
		t.Fatalf("snapshot usable from %v, want zone-b", got)
	}
}
