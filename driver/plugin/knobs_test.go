package plugin_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

// TestOmitRegion: a driver with one zone key (keys.omitRegion) reports no
// region key in NodeGetInfo, volumes or snapshots, and a requisite whose
// segments carry one names no topology of it: INVALID_ARGUMENT as for a
// misspelt zone (spec.md CreateSnapshotRequest accessibility_requirements:
// "COs SHALL only specify topological accessibility information supported
// by the SP").
func TestOmitRegion(t *testing.T) {
	c := newClientIn(t, "keys: {omitRegion: true}\n"+drivertest.World(""), "")
	ctx := context.Background()
	info, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || !sameTopology([]*csi.Topology{info.GetAccessibleTopology()}, []*csi.Topology{zoneOnly("zone-a")}) {
		t.Fatalf("NodeGetInfo = %v, %v; want the zone key only", info, err)
	}
	vol := c.mustCreateVolume(drivertest.VolumeRequest("omit-vol", gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{zoneOnly("zone-d")}}))
	if got := vol.GetAccessibleTopology(); !sameTopology(got, []*csi.Topology{zoneOnly("zone-d")}) {
		t.Fatalf("volume accessible_topology = %v, want zone-d without region", got)
	}
	snap := c.mustCreateSnapshot("omit-snap", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{zoneOnly("zone-b")}})
	if got := snap.GetAccessibleTopology(); !sameTopology(got, []*csi.Topology{zoneOnly("zone-b")}) {
		t.Fatalf("snapshot accessible_topology = %v, want zone-b without region", got)
	}
	tests := []struct {
		name string
		call func() error
		want codes.Code
		msg  string
	}{
		{"volume requisite with a region key", errOf(c.CreateVolume, drivertest.VolumeRequest("omit-bad-1", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")})),
			codes.InvalidArgument, "names no zone of this driver"},
		{"snapshot requisite with a region key", errOf(c.CreateSnapshot, drivertest.SnapshotRequest("omit-bad-2", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: zones("zone-d")})),
			codes.InvalidArgument, "names no zone of this driver"},
		{"region scope parameter", errOf(c.CreateSnapshot, &csi.CreateSnapshotRequest{Name: "omit-bad-3", SourceVolumeId: vol.GetVolumeId(),
			Parameters: map[string]string{plugin.ParamSnapshotScope: "region"}}), codes.InvalidArgument, "keys.omitRegion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); codeOf(err) != tt.want || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want %v containing %q", err, tt.want, tt.msg)
			}
		})
	}
}

// TestDefaultSnapshotScope: snapshots.defaultScope sets the scope of a
// snapshot whose parameters name none, and the parameter still wins.
// Region scope answers one {region} segment; global none at all (spec.md
// Snapshot.accessible_topology: "If it is not specified, the CO MAY assume
// the snapshot is equally usable from all topologies in the cluster").
func TestDefaultSnapshotScope(t *testing.T) {
	tests := []struct {
		name, scope string
		params      map[string]string
		req         *csi.TopologyRequirement
		want        []*csi.Topology
	}{
		{"zone default", "", nil, nil, zones("zone-b")},
		{"region default", "region", nil, nil, []*csi.Topology{region("region-1")}},
		{"region default, requisite in another region", "region", nil, &csi.TopologyRequirement{Requisite: zones("zone-d")}, []*csi.Topology{region("region-2")}},
		{"region default, zone parameter", "region", map[string]string{plugin.ParamSnapshotScope: "zone"}, nil, zones("zone-b")},
		{"global default", "global", nil, nil, nil},
		{"global default, requisite", "global", nil, &csi.TopologyRequirement{Requisite: zones("zone-a")}, nil},
		{"global default, region parameter", "global", map[string]string{plugin.ParamSnapshotScope: "region"}, nil, []*csi.Topology{region("region-1")}},
		{"zone default, global parameter", "zone", map[string]string{plugin.ParamSnapshotScope: "global"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := drivertest.World("")
			if tt.scope != "" {
				doc = "snapshots: {defaultScope: " + tt.scope + "}\n" + doc
			}
			c := newClientIn(t, doc, "")
			src := c.mustCreateVolume(drivertest.VolumeRequest("scope-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-b")}))
			resp, err := c.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "scope", SourceVolumeId: src.GetVolumeId(),
				Parameters: tt.params, AccessibilityRequirements: tt.req})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetSnapshot().GetAccessibleTopology(); !sameTopology(got, tt.want) {
				t.Fatalf("accessible_topology = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSourceZoneOnly: a driver that cuts snapshots only in their source
// volume's zone (snapshots.sourceZoneOnly) cuts them there when the
// requisite allows it, and answers anything else RESOURCE_EXHAUSTED
// naming that zone (spec.md CreateSnapshot Errors: "Not enough resources
// to create snapshot").
func TestSourceZoneOnly(t *testing.T) {
	c := newClientIn(t, "snapshots: {sourceZoneOnly: true}\n"+drivertest.World(""), "")
	src := c.mustCreateVolume(drivertest.VolumeRequest("szo-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-b")}))
	tests := []struct {
		name     string
		params   map[string]string
		req      *csi.TopologyRequirement
		want     []*csi.Topology
		wantCode codes.Code
	}{
		{"no requirements", nil, nil, zones("zone-b"), codes.OK},
		{"requisite with the source zone, preferring another", nil, &csi.TopologyRequirement{Requisite: zones("zone-a", "zone-b"), Preferred: zones("zone-a")}, zones("zone-b"), codes.OK},
		{"whole region requisite", nil, &csi.TopologyRequirement{Requisite: []*csi.Topology{region("region-1")}}, zones("zone-b"), codes.OK},
		{"requisite without the source zone", nil, &csi.TopologyRequirement{Requisite: zones("zone-a", "zone-d")}, nil, codes.ResourceExhausted},
		{"two copies", map[string]string{plugin.ParamSnapshotCopies: "2"}, nil, nil, codes.ResourceExhausted},
		{"two copies within a requisite", map[string]string{plugin.ParamSnapshotCopies: "2"}, &csi.TopologyRequirement{Requisite: zones("zone-a", "zone-b")}, nil, codes.ResourceExhausted},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "szo-" + string(rune('a'+i)), SourceVolumeId: src.GetVolumeId(),
				Parameters: tt.params, AccessibilityRequirements: tt.req})
			if codeOf(err) != tt.wantCode {
				t.Fatalf("CreateSnapshot: %v, want %v", err, tt.wantCode)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "region-1/zone-b") {
					t.Fatalf("error %v does not name the source zone region-1/zone-b", err)
				}
				return
			}
			if got := resp.GetSnapshot().GetAccessibleTopology(); !sameTopology(got, tt.want) {
				t.Fatalf("accessible_topology = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPreattachedVolumes: with preattachedVolumesPerNode every node
// reports its whole max_volumes_per_node, and ControllerPublishVolume
// answers RESOURCE_EXHAUSTED (spec.md ControllerPublishVolume Errors, "Max
// volumes attached") once published plus pre-attached volumes reach it.
func TestPreattachedVolumes(t *testing.T) {
	tests := []struct {
		name                  string
		max, preattached, fit int64
		flagMax               int64
	}{
		{"none pre-attached", 3, 0, 3, 0},
		{"one of three", 3, 1, 2, 0},
		{"two of three", 3, 2, 1, 0},
		{"the flag's limit counts them too", 2, 1, 3, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "maxVolumesPerNode: " + itoa(tt.max) + "\npreattachedVolumesPerNode: " + itoa(tt.preattached) + "\n" + drivertest.World("")
			d := drivertest.Start(t, drivertest.Options{World: doc, Config: maxVolumesPerNode(tt.flagMax)})
			c := newCSIClient(t, d)
			ctx := context.Background()
			info, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if want := max(tt.max, tt.flagMax); info.GetMaxVolumesPerNode() != want {
				t.Fatalf("max_volumes_per_node = %d, want %d", info.GetMaxVolumesPerNode(), want)
			}
			expectPublishesFit(t, c, info, "pre", tt.fit)
		})
	}
}

// TestPublishLimit: a node's publishLimit lets ControllerPublishVolume
// take more volumes than NodeGetInfo's max_volumes_per_node, an advisory
// cap as EBS --reserved-volume-attachments leaves one (csi.proto
// NodeGetInfoResponse: the CO reads the field; no MUST binds the
// controller to it); past publishLimit it is RESOURCE_EXHAUSTED (spec.md
// ControllerPublishVolume Errors, "Max volumes attached"). Another
// node's own limit is unchanged.
func TestPublishLimit(t *testing.T) {
	tests := []struct {
		name          string
		node          string
		reported, fit int64
	}{
		{"advisory: four fit where two are reported", "publishLimit: 4", 2, 4},
		{"no publishLimit: the reported limit", "", 2, 2},
		{"publishLimit equal to the reported limit", "publishLimit: 2", 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "maxVolumesPerNode: 3\nnodes:\n- {id: " + drivertest.NodeID + ", zone: zone-a, maxVolumesPerNode: 2, " + tt.node + "}\n" + drivertest.World("")
			d := drivertest.Start(t, drivertest.Options{World: strings.ReplaceAll(doc, ", }", "}")})
			c := newCSIClient(t, d)
			ctx := context.Background()
			info, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if info.GetMaxVolumesPerNode() != tt.reported {
				t.Fatalf("max_volumes_per_node = %d, want %d", info.GetMaxVolumesPerNode(), tt.reported)
			}
			expectPublishesFit(t, c, info, "pl", tt.fit)
		})
	}
}

// expectPublishesFit publishes new volumes to the node until one more
// than fit: the first fit succeed, the next is RESOURCE_EXHAUSTED (spec.md
// ControllerPublishVolume Errors, "Max volumes attached").
func expectPublishesFit(t *testing.T, c *client, info *csi.NodeGetInfoResponse, prefix string, fit int64) {
	t.Helper()
	for i := int64(0); i <= fit; i++ {
		v := c.mustCreateVolume(drivertest.VolumeRequest(prefix+"-"+itoa(i), gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{info.GetAccessibleTopology()}}))
		_, err := c.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: info.GetNodeId(), VolumeCapability: drivertest.MountCapability()})
		want := codes.OK
		if i == fit {
			want = codes.ResourceExhausted
		}
		if codeOf(err) != want {
			t.Fatalf("publish %d of %d that fit: %v, want %v", i+1, fit, err, want)
		}
	}
}

// TestPreattachedFillingTheFlagLimit: a --max-volumes-per-node leaving no
// room beside the pre-attached volumes stops the driver at start.
func TestPreattachedFillingTheFlagLimit(t *testing.T) {
	topo, err := world.Parse([]byte("maxVolumesPerNode: 4\npreattachedVolumesPerNode: 2\n" + drivertest.World("")))
	if err != nil {
		t.Fatal(err)
	}
	_, err = plugin.New(plugin.Config{Topology: topo, StateDir: t.TempDir(), MaxVolumesPerNode: 2, ServeController: true})
	if err == nil || !strings.Contains(err.Error(), "preattachedVolumesPerNode (2)") {
		t.Fatalf("New = %v, want an error naming preattachedVolumesPerNode", err)
	}
}

// TestRacksReported: a zone split into racks makes the node report the
// rack key beside region and zone, while volumes stay zonal, and a
// requisite without the rack key (what a provisioner sends from a
// zone-only StorageClass) is accepted.
func TestRacksReported(t *testing.T) {
	doc := "regions:\n- name: region-1\n  zones: [{name: zone-a, racks: [rack-1, rack-2]}, {name: zone-b, racks: [rack-1, rack-2]}]\n"
	d := drivertest.Start(t, drivertest.Options{World: doc, Config: func(c *plugin.Config) { c.Node = plugin.NodeLocation{Zone: 1, Rack: "rack-2"} }})
	c := newCSIClient(t, d)
	info, err := c.NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	want := map[string]string{world.DefaultRegionKey: "region-1", world.DefaultZoneKey: "zone-b", world.DefaultRackKey: "rack-2"}
	if err != nil || !sameTopology([]*csi.Topology{info.GetAccessibleTopology()}, []*csi.Topology{{Segments: want}}) {
		t.Fatalf("NodeGetInfo = %v, %v; want segment %v", info, err, want)
	}
	zoneClass := &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: map[string]string{world.DefaultZoneKey: "zone-b"}}}}
	vol := c.mustCreateVolume(drivertest.VolumeRequest("rack-vol", gib, zoneClass))
	if got := vol.GetAccessibleTopology(); !sameTopology(got, zones("zone-b")) {
		t.Fatalf("volume accessible_topology = %v, want zone-b with region and zone keys", got)
	}
	if snap := c.mustCreateSnapshot("rack-snap", vol.GetVolumeId(), zoneClass); !sameTopology(snap.GetAccessibleTopology(), zones("zone-b")) {
		t.Fatalf("snapshot accessible_topology = %v, want zone-b", snap.GetAccessibleTopology())
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestSnapshotReadyAfter: with snapshots.readyAfter a snapshot and its
// group are ready_to_use only that long after the cut, in every answer
// (spec.md "The ready_to_use Parameter": it "SHALL be false" while the
// snapshot is processed; ListSnapshots: "Snapshots which were recently
// created and not yet ready to use must be retrievable"; csi.proto
// VolumeGroupSnapshot.ready_to_use: false if any member's is), also after
// a restart; and a restore from a snapshot not ready yet is UNAVAILABLE,
// a code the caller retries, with no data written.
func TestSnapshotReadyAfter(t *testing.T) {
	tests := []struct {
		name       string
		readyAfter string
		restart    bool
		wait       time.Duration
		wantReady  bool
	}{
		{"no setting: ready at once", "", false, 0, true},
		{"an hour: not ready", "1h", false, 0, false},
		{"an hour: still not ready after a restart", "1h", true, 0, false},
		{"ready once the time has passed", "300ms", false, 400 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := drivertest.World("")
			if tt.readyAfter != "" {
				doc = "snapshots: {readyAfter: " + tt.readyAfter + "}\n" + doc
			}
			d := drivertest.Start(t, drivertest.Options{World: doc})
			c := newCSIClient(t, d)
			src := c.mustCreateVolume(drivertest.VolumeRequest("ready-src", gib, &csi.TopologyRequirement{Requisite: zones("zone-b")}))
			snap := c.mustCreateSnapshot("ready-snap", src.GetVolumeId(), nil)
			group, err := csi.NewGroupControllerClient(d.Conn(t)).CreateVolumeGroupSnapshot(context.Background(),
				&csi.CreateVolumeGroupSnapshotRequest{Name: "ready-group", SourceVolumeIds: []string{src.GetVolumeId()}})
			if err != nil {
				t.Fatal(err)
			}
			if tt.restart {
				d.Restart(t)
				c = newCSIClient(t, d)
			}
			time.Sleep(tt.wait)
			for what, ready := range readyAnswers(t, d, c, snap, group.GetGroupSnapshot().GetGroupSnapshotId()) {
				if ready != tt.wantReady {
					t.Errorf("%s: ready_to_use = %v, want %v", what, ready, tt.wantReady)
				}
			}
			before := filesUnder(t, d.Config.DataDir)
			req := drivertest.VolumeRequest("ready-restore", gib, &csi.TopologyRequirement{Requisite: zones("zone-b")})
			req.VolumeContentSource = drivertest.FromSnapshot(snap.GetSnapshotId())
			_, err = c.CreateVolume(context.Background(), req)
			if tt.wantReady {
				if err != nil {
					t.Fatalf("restore from a ready snapshot: %v", err)
				}
				return
			}
			if codeOf(err) != codes.Unavailable || !strings.Contains(err.Error(), "not ready_to_use") {
				t.Fatalf("restore from a snapshot not ready: %v, want UNAVAILABLE saying it is not ready_to_use", err)
			}
			if after := filesUnder(t, d.Config.DataDir); after != before {
				t.Fatalf("a refused restore changed the data directory: %d files before, %d after", before, after)
			}
		})
	}
}

// readyAnswers is ready_to_use of a snapshot and its group as every RPC
// reporting them answers.
func readyAnswers(t *testing.T, d *drivertest.Driver, c *client, snap *csi.Snapshot, groupID string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	snapID := snap.GetSnapshotId()
	again, err := c.CreateSnapshot(ctx, drivertest.SnapshotRequest("ready-snap", snap.GetSourceVolumeId(), nil))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{"repeated CreateSnapshot": again.GetSnapshot().GetReadyToUse()}
	all, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all.GetEntries() {
		got["ListSnapshots entry "+e.GetSnapshot().GetSnapshotId()] = e.GetSnapshot().GetReadyToUse()
	}
	get, err := c.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snapID})
	if err != nil {
		t.Fatal(err)
	}
	got["GetSnapshot"] = get.GetSnapshot().GetReadyToUse()
	byID, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snapID})
	if err != nil || len(byID.GetEntries()) != 1 {
		t.Fatalf("ListSnapshots by ID: %v, %v", byID, err)
	}
	got["ListSnapshots by ID"] = byID.GetEntries()[0].GetSnapshot().GetReadyToUse()
	g, err := csi.NewGroupControllerClient(d.Conn(t)).GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: groupID})
	if err != nil {
		t.Fatal(err)
	}
	got["GetVolumeGroupSnapshot"] = g.GetGroupSnapshot().GetReadyToUse()
	for _, m := range g.GetGroupSnapshot().GetSnapshots() {
		got["group member "+m.GetSnapshotId()] = m.GetReadyToUse()
	}
	return got
}

// filesUnder counts the files and directories under dir.
func filesUnder(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	if err := filepath.WalkDir(dir, func(string, fs.DirEntry, error) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNodeOnlyKeys: a driver with EBS-style keys (keys.nodeZone,
// keys.nodeOS, under keys.omitRegion) reports them in NodeGetInfo only;
// volumes and snapshots carry the zone key alone. A requisite built from
// the node's segment, as a CO builds it from NodeGetInfo's keys, places
// in that zone, and GetCapacity takes the node's segment; a segment whose
// OS no node of the driver reports names no topology of it.
func TestNodeOnlyKeys(t *testing.T) {
	const vendorZone, osKey = "topology.zonepath.csi.dev/zone", "kubernetes.io/os"
	c := newClientIn(t, "keys: {omitRegion: true, nodeZone: "+vendorZone+", nodeOS: "+osKey+"}\n"+drivertest.World(""), "")
	ctx := context.Background()
	info, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	node := &csi.Topology{Segments: map[string]string{world.DefaultZoneKey: "zone-a", vendorZone: "zone-a", osKey: "linux"}}
	if err != nil || !sameTopology([]*csi.Topology{info.GetAccessibleTopology()}, []*csi.Topology{node}) {
		t.Fatalf("NodeGetInfo = %v, %v; want %v", info, err, node)
	}
	nodeOf := func(z string) *csi.Topology {
		return &csi.Topology{Segments: map[string]string{world.DefaultZoneKey: z, vendorZone: z, osKey: "linux"}}
	}
	vol := c.mustCreateVolume(drivertest.VolumeRequest("ebs-vol", gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{nodeOf("zone-b")}, Preferred: []*csi.Topology{nodeOf("zone-b")}}))
	if got := vol.GetAccessibleTopology(); !sameTopology(got, []*csi.Topology{zoneOnly("zone-b")}) {
		t.Fatalf("volume accessible_topology = %v, want the zone key only", got)
	}
	snap := c.mustCreateSnapshot("ebs-snap", vol.GetVolumeId(), &csi.TopologyRequirement{Requisite: []*csi.Topology{nodeOf("zone-b")}})
	if got := snap.GetAccessibleTopology(); !sameTopology(got, []*csi.Topology{zoneOnly("zone-b")}) {
		t.Fatalf("snapshot accessible_topology = %v, want the zone key only", got)
	}
	if _, err := c.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: nodeOf("zone-c")}); err != nil {
		t.Fatalf("GetCapacity of a node's segment: %v", err)
	}
	windows := &csi.Topology{Segments: map[string]string{world.DefaultZoneKey: "zone-a", osKey: "windows"}}
	if _, err := c.CreateVolume(ctx, drivertest.VolumeRequest("ebs-windows", gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{windows}})); codeOf(err) != codes.InvalidArgument {
		t.Fatalf("CreateVolume with a requisite of another OS only = %v, want INVALID_ARGUMENT (names no topology of the driver)", err)
	}
}

// TestRestoreWhereCutOnly: with snapshots.restoreWhereCutOnly a snapshot
// restores only in the zones holding its copies, with
// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS and without it (a node-local driver
// whose snapshots report no accessible_topology): a requisite without
// them is RESOURCE_EXHAUSTED (spec.md CreateVolume Errors, "Unable to
// provision in accessible_topology"), and wider scopes are
// INVALID_ARGUMENT. Without the knob and the capability, it restores
// anywhere.
func TestRestoreWhereCutOnly(t *testing.T) {
	const knob = "snapshots: {restoreWhereCutOnly: true}\n"
	tests := []struct {
		name, world string
		disable     []string
		elsewhere   codes.Code
	}{
		{"knob, capability on", knob, nil, codes.ResourceExhausted},
		{"knob, capability off", knob, []string{plugin.CapSnapshotAccessibility}, codes.ResourceExhausted},
		{"no knob, capability off", "", []string{plugin.CapSnapshotAccessibility}, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := drivertest.Start(t, drivertest.Options{World: tt.world + drivertest.World(""), Config: func(c *plugin.Config) {
				if err := c.DisableCapabilities(tt.disable); err != nil {
					t.Fatal(err)
				}
			}})
			c := newCSIClient(t, d)
			src := c.mustCreateVolume(drivertest.VolumeRequest("rwc-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-b")}))
			snap := c.mustCreateSnapshot("rwc-snap", src.GetVolumeId(), nil)
			restore := func(name, zone string) error {
				req := drivertest.VolumeRequest(name, gib, &csi.TopologyRequirement{Requisite: zones(zone)})
				req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshotId()}}}
				_, err := c.CreateVolume(context.Background(), req)
				return err
			}
			if err := restore("rwc-home", "zone-b"); err != nil {
				t.Fatalf("restore in the source's zone: %v", err)
			}
			if err := restore("rwc-elsewhere", "zone-a"); codeOf(err) != tt.elsewhere {
				t.Fatalf("restore in another zone: %v, want %v", err, tt.elsewhere)
			}
			if tt.world == "" {
				return
			}
			_, err := c.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{Name: "rwc-global", SourceVolumeId: src.GetVolumeId(),
				Parameters: map[string]string{plugin.ParamSnapshotScope: "global"}})
			if codeOf(err) != codes.InvalidArgument {
				t.Fatalf("global scope parameter: %v, want InvalidArgument", err)
			}
		})
	}
}

// regionOnlyWorld: keys.omitZone over drivertest.World; node-c and node-d
// are nodes of zone-c (region-1) and zone-d (region-2) beside the driver's
// own node-1 in zone-a.
const regionOnlyWorld = "keys: {omitZone: true}\nnodes:\n- {id: node-c, zone: zone-c}\n- {id: node-d, zone: zone-d}\n"

// TestOmitZone: a driver reporting the region key alone (keys.omitZone)
// reports {region} in NodeGetInfo, volumes and snapshots, zone-scoped
// snapshots included (one segment per region), and serves a volume from
// every zone of its region: ControllerPublishVolume to a node of another
// zone of it succeeds (spec.md: accessible_topology says where the volume
// is accessible from), to a node of another region is FAILED_PRECONDITION.
// A requisite naming the zone key names no topology of it:
// INVALID_ARGUMENT alone, as under keys.omitRegion.
func TestOmitZone(t *testing.T) {
	c := newClientIn(t, regionOnlyWorld+drivertest.World(""), "")
	ctx := context.Background()
	info, err := c.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil || !sameTopology([]*csi.Topology{info.GetAccessibleTopology()}, []*csi.Topology{region("region-1")}) {
		t.Fatalf("NodeGetInfo = %v, %v; want the region key only", info, err)
	}
	vol := c.mustCreateVolume(drivertest.VolumeRequest("ro-vol", mib, &csi.TopologyRequirement{Requisite: []*csi.Topology{region("region-1")}}))
	if got := vol.GetAccessibleTopology(); !sameTopology(got, []*csi.Topology{region("region-1")}) {
		t.Fatalf("volume accessible_topology = %v, want region-1 alone", got)
	}
	for node, want := range map[string]codes.Code{drivertest.NodeID: codes.OK, "node-c": codes.OK, "node-d": codes.FailedPrecondition} {
		if err := c.publish(vol.GetVolumeId(), node); codeOf(err) != want {
			t.Errorf("ControllerPublishVolume to %s = %v, want %v", node, err, want)
		}
		c.unpublish(vol.GetVolumeId(), node)
	}
	// Two copies in zones of region-1 are one region segment; a zone
	// scope cannot be told from region scope by a CO that sees regions.
	snap := c.mustCreateSnapshot("ro-snap", vol.GetVolumeId(), nil)
	if got := snap.GetAccessibleTopology(); !sameTopology(got, []*csi.Topology{region("region-1")}) {
		t.Fatalf("snapshot accessible_topology = %v, want region-1 once", got)
	}
	wide, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "ro-snap-2", SourceVolumeId: vol.GetVolumeId(),
		Parameters: map[string]string{plugin.ParamSnapshotCopies: "3"}})
	if err != nil || !sameTopology(wide.GetSnapshot().GetAccessibleTopology(), []*csi.Topology{region("region-1")}) {
		t.Fatalf("CreateSnapshot of three copies in region-1 = %v, %v; want region-1 once", wide, err)
	}
	restored := c.mustCreateVolume(restoreIn("ro-restore", snap.GetSnapshotId(), []*csi.Topology{region("region-1")}))
	if got := restored.GetAccessibleTopology(); !sameTopology(got, []*csi.Topology{region("region-1")}) {
		t.Fatalf("restore accessible_topology = %v, want region-1", got)
	}
	tests := []struct {
		name string
		req  *csi.CreateVolumeRequest
		want codes.Code
	}{
		{"zone key alone", drivertest.VolumeRequest("ro-bad-1", gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{zoneOnly("zone-a")}}), codes.InvalidArgument},
		{"region and zone alone", drivertest.VolumeRequest("ro-bad-2", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")}), codes.InvalidArgument},
		{"region and zone beside a region", drivertest.VolumeRequest("ro-ok", gib, &csi.TopologyRequirement{Requisite: append(zones("zone-a"), region("region-2"))}), codes.OK},
		{"restore into another region", restoreIn("ro-bad-3", snap.GetSnapshotId(), []*csi.Topology{region("region-2")}), codes.ResourceExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.CreateVolume(ctx, tt.req)
			if codeOf(err) != tt.want {
				t.Fatalf("CreateVolume = %v, %v; want %v", resp, err, tt.want)
			}
		})
	}
}
