package plugin_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// groupDriver is a test driver with a GroupController client.
type groupDriver struct {
	*testDriver
	group csi.GroupControllerClient
}

// newGroupDriver serves a driver whose zone-c holds two snapshot copies,
// with a fault file for outages.
func newGroupDriver(t *testing.T, configure func(*plugin.Config)) *groupDriver {
	t.Helper()
	d := &testDriver{Driver: drivertest.Start(t, drivertest.Options{World: drivertest.World("snapshotQuota: 2"), Faults: drivertest.NoRules, Config: configure})}
	d.client = newCSIClient(t, d.Driver)
	return &groupDriver{testDriver: d, group: csi.NewGroupControllerClient(d.Conn(t))}
}

// volumesIn creates one volume per zone named, and returns their IDs.
func (d *groupDriver) volumesIn(t *testing.T, prefix string, zoneNames ...string) []string {
	t.Helper()
	var ids []string
	for i, z := range zoneNames {
		name := prefix + "-" + z + "-" + string(rune('a'+i))
		ids = append(ids, d.mustCreateVolume(drivertest.VolumeRequest(name, gib, &csi.TopologyRequirement{Requisite: zones(z)})).GetVolumeId())
	}
	return ids
}

func (d *groupDriver) createGroup(name string, sources []string, params map[string]string) (*csi.VolumeGroupSnapshot, error) {
	resp, err := d.group.CreateVolumeGroupSnapshot(context.Background(), &csi.CreateVolumeGroupSnapshotRequest{Name: name, SourceVolumeIds: sources, Parameters: params})
	return resp.GetGroupSnapshot(), err
}

func memberIDs(g *csi.VolumeGroupSnapshot) []string {
	var out []string
	for _, s := range g.GetSnapshots() {
		out = append(out, s.GetSnapshotId())
	}
	return out
}

// TestGroupSnapshotMemberTopology: each member of a group across zones and
// regions carries the accessible_topology a single snapshot of its volume
// with the same class parameters gets (CreateVolumeGroupSnapshotRequest
// has no accessibility_requirements), and the group's ID (csi.proto
// Snapshot.group_snapshot_id: "MUST be the same as the group_snapshot_id
// in that message").
func TestGroupSnapshotMemberTopology(t *testing.T) {
	d := newGroupDriver(t, nil)
	sources := d.volumesIn(t, "topo", "zone-a", "zone-d")
	tests := []struct {
		name   string
		params map[string]string
		want   [][]*csi.Topology
	}{
		{"zone scope", nil, [][]*csi.Topology{zones("zone-a"), zones("zone-d")}},
		{"region scope", map[string]string{plugin.ParamSnapshotScope: "region"}, [][]*csi.Topology{{region("region-1")}, {region("region-2")}}},
		{"two copies", map[string]string{plugin.ParamSnapshotCopies: "2"}, [][]*csi.Topology{zones("zone-a", "zone-b"), zones("zone-d", "zone-a")}},
		{"global scope", map[string]string{plugin.ParamSnapshotScope: "global"}, [][]*csi.Topology{nil, nil}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := d.createGroup("topo-"+strings.ReplaceAll(tt.name, " ", "-"), sources, tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if len(g.GetSnapshots()) != len(sources) || !g.GetReadyToUse() {
				t.Fatalf("group = %v, want %d ready members", g, len(sources))
			}
			for j, m := range g.GetSnapshots() {
				if m.GetSourceVolumeId() != sources[j] || m.GetGroupSnapshotId() != g.GetGroupSnapshotId() {
					t.Errorf("member %d = %v, want source %s, group %s", j, m, sources[j], g.GetGroupSnapshotId())
				}
				if got := m.GetAccessibleTopology(); !sameTopology(got, tt.want[j]) {
					t.Errorf("member %d accessible_topology = %v, want %v", j, got, tt.want[j])
				}
				single, err := d.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "single-" + string(rune('a'+i)) + string(rune('0'+j)), SourceVolumeId: sources[j], Parameters: tt.params})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := m.GetAccessibleTopology(), single.GetSnapshot().GetAccessibleTopology(); !sameTopology(got, want) {
					t.Errorf("member %d accessible_topology = %v, a single snapshot's = %v", j, got, want)
				}
			}
		})
	}
}

// TestGroupSnapshotQuota: every member counts against its zone's snapshot
// quota, and a group that does not fit whole is refused with
// RESOURCE_EXHAUSTED (CreateVolumeGroupSnapshot Errors, "Not enough space
// to create group snapshot") leaving no snapshot record or data behind
// ("SP SHOULD also do clean up and make sure no snapshots are leaked").
func TestGroupSnapshotQuota(t *testing.T) {
	d := newGroupDriver(t, nil)
	ctx := context.Background()
	inC := d.volumesIn(t, "quota", "zone-c", "zone-c", "zone-c")
	dataBefore := d.dataFiles(t)
	_, err := d.createGroup("three-in-c", inC, nil)
	if codeOf(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "zone-c") {
		t.Fatalf("group of 3 in a zone holding 2: %v, want RESOURCE_EXHAUSTED naming zone-c", err)
	}
	if after := d.dataFiles(t); !slices.Equal(after, dataBefore) {
		t.Errorf("a refused group left data: %v, before %v", after, dataBefore)
	}
	if list, err := d.ListSnapshots(ctx, &csi.ListSnapshotsRequest{}); err != nil || len(list.GetEntries()) != 0 {
		t.Errorf("a refused group left snapshots: %v, %v", list, err)
	}
	if _, err := d.createGroup("two-in-c", inC[:2], nil); err != nil {
		t.Fatalf("group of 2 in a zone holding 2: %v", err)
	}
	_, err = d.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "third", SourceVolumeId: inC[2]})
	if codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("a third snapshot in zone-c after a group of 2 there: %v, want RESOURCE_EXHAUSTED", err)
	}
}

// TestGroupSnapshotIdempotency: the same name with the same
// source_volume_ids (in any order) and parameters is the same group; other
// volumes or parameters are ALREADY_EXISTS (CreateVolumeGroupSnapshot
// Errors, "incompatible with the specified source_volume_ids or
// parameters").
func TestGroupSnapshotIdempotency(t *testing.T) {
	d := newGroupDriver(t, nil)
	vols := d.volumesIn(t, "idem", "zone-a", "zone-b", "zone-d")
	first, err := d.createGroup("idem", vols[:2], nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := d.createGroup("idem", []string{vols[1], vols[0]}, map[string]string{})
	if err != nil || !proto.Equal(first, again) {
		t.Fatalf("repeated create (sources reordered) = %v, %v; want %v", again, err, first)
	}
	for _, tt := range []struct {
		name    string
		sources []string
		params  map[string]string
	}{
		{"another volume", []string{vols[0], vols[2]}, nil},
		{"one volume more", vols, nil},
		{"one volume less", vols[:1], nil},
		{"other parameters", vols[:2], map[string]string{plugin.ParamSnapshotScope: "region"}},
	} {
		if _, err := d.createGroup("idem", tt.sources, tt.params); codeOf(err) != codes.AlreadyExists {
			t.Errorf("%s: %v, want ALREADY_EXISTS", tt.name, err)
		}
	}
}

// TestGroupSnapshotBadInput: malformed requests are INVALID_ARGUMENT and an
// unknown source volume NOT_FOUND, before anything is cut.
func TestGroupSnapshotBadInput(t *testing.T) {
	d := newGroupDriver(t, nil)
	vol := d.volumesIn(t, "bad", "zone-a")[0]
	create := func(name string, sources []string, params map[string]string) func() error {
		return errOf(d.group.CreateVolumeGroupSnapshot, &csi.CreateVolumeGroupSnapshotRequest{Name: name, SourceVolumeIds: sources, Parameters: params})
	}
	runCodeCases(t, []codeCase{
		{"no name", create("", []string{vol}, nil), codes.InvalidArgument},
		{"name with NUL", create("a\x00b", []string{vol}, nil), codes.InvalidArgument},
		{"no source volumes", create("g", nil, nil), codes.InvalidArgument},
		{"a source volume twice", create("g", []string{vol, vol}, nil), codes.InvalidArgument},
		{"source ID escaping the data directory", create("g", []string{vol, "../state"}, nil), codes.InvalidArgument},
		{"unknown parameter", create("g", []string{vol}, map[string]string{plugin.DefaultName + "/copies": "2"}), codes.InvalidArgument},
		{"unknown source volume", create("g", []string{vol, "zpv-unknown"}, nil), codes.NotFound},
		{"Get without ID", errOf(d.group.GetVolumeGroupSnapshot, &csi.GetVolumeGroupSnapshotRequest{}), codes.InvalidArgument},
		{"Get of a malformed ID", errOf(d.group.GetVolumeGroupSnapshot, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: "../x"}), codes.InvalidArgument},
		{"Get of an unknown group", errOf(d.group.GetVolumeGroupSnapshot, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: "zpg-unknown"}), codes.NotFound},
		{"Delete without ID", errOf(d.group.DeleteVolumeGroupSnapshot, &csi.DeleteVolumeGroupSnapshotRequest{}), codes.InvalidArgument},
		{"Delete of an unknown group", errOf(d.group.DeleteVolumeGroupSnapshot, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: "zpg-unknown", SnapshotIds: []string{"zps-x"}}), codes.OK},
	})
	if files := d.dataFiles(t); len(files) != 1 {
		t.Errorf("refused requests left data: %v", files)
	}
}

// TestGroupSnapshotLifecycle: a group survives a restart; its members
// restore like any snapshot and cannot be deleted alone (DeleteSnapshot
// Errors, "Snapshot is part of a group", INVALID_ARGUMENT); Get and Delete
// check snapshot_ids ("Snapshot list mismatch", INVALID_ARGUMENT); Delete
// removes the members and their data and is idempotent.
func TestGroupSnapshotLifecycle(t *testing.T) {
	d := newGroupDriver(t, nil)
	ctx := context.Background()
	vols := d.volumesIn(t, "life", "zone-a", "zone-d")
	g, err := d.createGroup("life", vols, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.restart(t)
	d.group = csi.NewGroupControllerClient(d.Conn(t))
	id, members := g.GetGroupSnapshotId(), memberIDs(g)
	got, err := d.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: id, SnapshotIds: members})
	if err != nil || !proto.Equal(got.GetGroupSnapshot(), g) {
		t.Fatalf("Get after restart = %v, %v; want %v", got, err, g)
	}
	restored := restoreRequest("life-restored", members[1])
	restored.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: zones("zone-d")}
	if _, err := d.CreateVolume(ctx, restored); err != nil {
		t.Fatalf("restoring member %s in its zone: %v", members[1], err)
	}
	runCodeCases(t, []codeCase{
		{"DeleteSnapshot of a member", errOf(d.DeleteSnapshot, &csi.DeleteSnapshotRequest{SnapshotId: members[0]}), codes.InvalidArgument},
		{"Get with a member missing", errOf(d.group.GetVolumeGroupSnapshot, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: id, SnapshotIds: members[:1]}), codes.InvalidArgument},
		{"Delete with a stranger", errOf(d.group.DeleteVolumeGroupSnapshot, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: id, SnapshotIds: []string{members[0], "zps-x"}}), codes.InvalidArgument},
	})
	if _, err := d.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: members[0]}); err != nil {
		t.Fatalf("refused deletes removed member %s: %v", members[0], err)
	}
	for range 2 {
		if _, err := d.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: id, SnapshotIds: []string{members[1], members[0]}}); err != nil {
			t.Fatalf("DeleteVolumeGroupSnapshot: %v", err)
		}
	}
	for _, m := range members {
		if _, err := d.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: m}); codeOf(err) != codes.NotFound {
			t.Errorf("member %s after deleting its group: %v, want NOT_FOUND", m, err)
		}
	}
	if _, err := d.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: id}); codeOf(err) != codes.NotFound {
		t.Errorf("Get of a deleted group: %v, want NOT_FOUND", err)
	}
	for _, f := range d.dataFiles(t) {
		if strings.HasPrefix(f, "snapshots/") {
			t.Errorf("data left after deleting the group: %s", f)
		}
	}
}

// TestGroupControllerSwitchedOff: with GROUP_CONTROLLER_SERVICE disabled
// the plugin capability is not advertised and the service not served.
func TestGroupControllerSwitchedOff(t *testing.T) {
	for _, off := range []bool{false, true} {
		d := newGroupDriver(t, func(c *plugin.Config) {
			if off {
				if err := c.DisableCapabilities([]string{plugin.CapGroupController}); err != nil {
					t.Fatal(err)
				}
			}
		})
		caps, err := csi.NewIdentityClient(d.Conn(t)).GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		advertised := slices.ContainsFunc(caps.GetCapabilities(), func(c *csi.PluginCapability) bool {
			return c.GetService().GetType() == csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE
		})
		_, err = d.group.GroupControllerGetCapabilities(context.Background(), &csi.GroupControllerGetCapabilitiesRequest{})
		if advertised == off || (codeOf(err) == codes.Unimplemented) != off {
			t.Errorf("disabled=%v: GROUP_CONTROLLER_SERVICE advertised=%v, GroupControllerGetCapabilities: %v", off, advertised, err)
		}
	}
}

// TestGroupSnapshotOutage: a group with a source volume in a zone that is
// down is UNAVAILABLE, as CreateSnapshot of that volume is, and nothing is
// cut, not even the members in zones that are up (outage.go: nothing is
// read in a zone that is down); the same request succeeds once the zone
// is back. The down zone's volume is moved away meanwhile, as a lost
// site's disks are: a cut that tries to read it fails otherwise.
func TestGroupSnapshotOutage(t *testing.T) {
	d := newGroupDriver(t, nil)
	vols := d.volumesIn(t, "outage", "zone-a", "zone-b")
	d.SetFaults(t, zoneB)
	lost := filepath.Join(d.dataDir(), "volumes", vols[1])
	if err := os.Rename(lost, lost+".lost"); err != nil {
		t.Fatal(err)
	}
	before := d.dataFiles(t)
	for _, sources := range [][]string{vols, {vols[1], vols[0]}} {
		_, err := d.createGroup("outage", sources, nil)
		if codeOf(err) != codes.Unavailable || !strings.Contains(err.Error(), vols[1]) {
			t.Errorf("group of %v with %s in zone-b, down: %v, want UNAVAILABLE naming it", sources, vols[1], err)
		}
	}
	if after := d.dataFiles(t); !slices.Equal(after, before) {
		t.Errorf("a group refused for an outage left data: %v, before %v", after, before)
	}
	if err := os.Rename(lost+".lost", lost); err != nil {
		t.Fatal(err)
	}
	d.SetFaults(t, drivertest.NoRules)
	if _, err := d.createGroup("outage", vols, nil); err != nil {
		t.Errorf("the group once zone-b is back: %v", err)
	}
}

// TestGroupSnapshotDeleteOutage: DeleteVolumeGroupSnapshot of a group with
// a member copy in a zone that is down is UNAVAILABLE and deletes nothing,
// neither records nor data, as DeleteSnapshot of such a snapshot is
// (outage.go); once the zone is back the same call deletes the group.
func TestGroupSnapshotDeleteOutage(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		zones  []string
		params map[string]string
	}{
		{"a member's volume in the zone", []string{"zone-a", "zone-b"}, nil},
		{"a member's second copy in the zone", []string{"zone-a"}, map[string]string{plugin.ParamSnapshotCopies: "2"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newGroupDriver(t, nil)
			g, err := d.createGroup("down", d.volumesIn(t, "down", tt.zones...), tt.params)
			if err != nil {
				t.Fatal(err)
			}
			del := &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: memberIDs(g)}
			before := d.dataFiles(t)
			d.SetFaults(t, zoneB)
			if _, err := d.group.DeleteVolumeGroupSnapshot(ctx, del); codeOf(err) != codes.Unavailable {
				t.Errorf("delete with a copy in zone-b, down: %v, want UNAVAILABLE", err)
			}
			got, err := d.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()})
			if err != nil || !proto.Equal(got.GetGroupSnapshot(), g) {
				t.Errorf("group after the refused delete: %v, %v; want %v", got, err, g)
			}
			if after := d.dataFiles(t); !slices.Equal(after, before) {
				t.Errorf("the refused delete removed data: %v, before %v", after, before)
			}
			d.SetFaults(t, drivertest.NoRules)
			if _, err := d.group.DeleteVolumeGroupSnapshot(ctx, del); err != nil {
				t.Errorf("delete once zone-b is back: %v", err)
			}
		})
	}
}

// TestGroupSnapshotDeleteRetry: when removing a member's data fails,
// DeleteVolumeGroupSnapshot is INTERNAL and the group stays, shown not
// ready; the retry, once the data can go, deletes the group, its members
// and all their data. Before, the records went first and the retry found
// no group, answered OK and left the data behind.
func TestGroupSnapshotDeleteRetry(t *testing.T) {
	d := newGroupDriver(t, nil)
	ctx := context.Background()
	g, err := d.createGroup("retry", d.volumesIn(t, "retry", "zone-a", "zone-d"), nil)
	if err != nil {
		t.Fatal(err)
	}
	members := memberIDs(g)
	// A non-empty directory where a member's archive was: os.Remove
	// fails on it (ENOTEMPTY), even for root.
	stuck := filepath.Join(d.dataDir(), "snapshots", members[1]+".tar")
	if err := os.Remove(stuck); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(stuck, "pinned"), 0o755); err != nil {
		t.Fatal(err)
	}
	del := &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: members}
	if _, err := d.group.DeleteVolumeGroupSnapshot(ctx, del); codeOf(err) != codes.Internal {
		t.Fatalf("delete with a member's data undeletable: %v, want INTERNAL", err)
	}
	got, err := d.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()})
	if err != nil || got.GetGroupSnapshot().GetReadyToUse() {
		t.Fatalf("group after a failed delete: %v, %v; want it kept, not ready", got, err)
	}
	if err := os.Remove(filepath.Join(stuck, "pinned")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.group.DeleteVolumeGroupSnapshot(ctx, del); err != nil {
		t.Fatalf("retried delete: %v", err)
	}
	if _, err := d.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()}); codeOf(err) != codes.NotFound {
		t.Errorf("group after the retried delete: %v, want NOT_FOUND", err)
	}
	for _, m := range members {
		if _, err := d.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: m}); codeOf(err) != codes.NotFound {
			t.Errorf("member %s after the retried delete: %v, want NOT_FOUND", m, err)
		}
	}
	for _, f := range d.dataFiles(t) {
		if strings.HasPrefix(f, "snapshots/") {
			t.Errorf("data left after the retried delete: %s", f)
		}
	}
}

// TestGroupsInOneZone: under snapshots.groupsInOneZone a group of volumes
// in two zones is FAILED_PRECONDITION (spec.md CreateVolumeGroupSnapshot
// Errors, "Cannot snapshot multiple volumes together") and leaves no
// group behind; a group within one zone is cut. Without the setting both
// are cut.
func TestGroupsInOneZone(t *testing.T) {
	for _, oneZone := range []bool{true, false} {
		t.Run(map[bool]string{true: "one zone", false: "default"}[oneZone], func(t *testing.T) {
			doc := drivertest.World("")
			if oneZone {
				doc = "snapshots: {groupsInOneZone: true}\n" + doc
			}
			d := &testDriver{Driver: drivertest.Start(t, drivertest.Options{World: doc})}
			d.client = newCSIClient(t, d.Driver)
			g := &groupDriver{testDriver: d, group: csi.NewGroupControllerClient(d.Conn(t))}
			across := g.volumesIn(t, "across", "zone-a", "zone-b")
			_, err := g.createGroup("across", across, nil)
			if want := map[bool]codes.Code{true: codes.FailedPrecondition, false: codes.OK}[oneZone]; codeOf(err) != want {
				t.Fatalf("group across zone-a and zone-b: %v, want %v", err, want)
			}
			if oneZone {
				if _, err := g.createGroup("across", across[:1], nil); err != nil {
					t.Fatalf("the refused group's name left behind: %v", err)
				}
			}
			if _, err := g.createGroup("within", g.volumesIn(t, "within", "zone-c", "zone-c"), nil); err != nil {
				t.Fatalf("group within zone-c: %v", err)
			}
		})
	}
}
