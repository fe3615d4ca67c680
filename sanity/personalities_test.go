package sanity_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	zpsanity "github.com/zonepath/zonepath/sanity"
)

// A shape stands between zonepath-sanity and the in-process zonepath
// driver and makes it behave like another family of drivers: thin
// interceptors, each compliant with the CSI spec, named after the
// personality of e2e/testdata/personalities/<name>/ that configures the
// real driver the same way (issue 21). They exist so that the suite's
// verdicts on drivers that are not zonepath's default are tested in
// `go test`, not only in the conformance matrix.
type shape func(t testing.TB, d *drivertest.Driver) grpc.UnaryServerInterceptor

// fixed is a shape that needs nothing of the running driver.
func fixed(i grpc.UnaryServerInterceptor) shape {
	return func(testing.TB, *drivertest.Driver) grpc.UnaryServerInterceptor { return i }
}

// personalities: compliant drivers of other shapes. Each must pass every
// extension test, and the summary must say which choice it saw.
var personalities = []struct {
	name   string                             // the personality it stands for
	clause string                             // why the shape is compliant
	world  string                             // topology file; default testdata/world.yaml
	config func(c *zpsanity.Config, _ string) // changes to testdata/zonepath.yaml
	plugin func(*plugin.Config)               // changes to the driver
	shape  shape
	says   []string // lines the summary must print: the choice seen
	never  []string // lines it must not print: a choice it did not make
	// skips are the tests that must skip, saying why: a global snapshot
	// leaves no configured segment outside it (and the idempotency cases
	// that need one are not exercised).
	skips []string
}{
	{
		name: "regional-snapshots",
		clause: "csi.proto Snapshot.accessible_topology: where the snapshot is usable from, any segment of the driver's keys; " +
			"TopologyRequirement.requisite x > n: the SP MAY choose the remaining topologies",
		// A segment in another region, outside every regional
		// snapshot of region-1, as sanity/README.md tells such a vendor.
		world:  regionsWorld,
		config: func(c *zpsanity.Config, _ string) { c.Segments = append(c.Segments, regionTwo) },
		shape:  fixed(scopeSnapshots("region")),
		says:   []string{"WARN [rule:requisite] MAY used: usable beyond requisite", "WARN [rule:preferred] MAY used"},
	},
	{
		name: "source-zone-only",
		clause: "CreateSnapshot Errors: RESOURCE_EXHAUSTED, \"Not enough resources to create snapshot\"; " +
			"the requisite is met in the source's zone when it names it (TopologyRequirement.requisite: at least one)",
		shape: sourceZoneOnly,
		says:  []string{"WARN [rule:preferred] SHOULD not met", "its source volume in [{topology.kubernetes.io/region=region-1,topology.kubernetes.io/zone=zone-a}]"},
	},
	{
		name: "preattached",
		clause: "ControllerPublishVolume Errors: RESOURCE_EXHAUSTED, \"the maximum supported number of volumes that can be attached " +
			"to the specified node are already attached\": a volume attached before the test counts",
		shape: preattached,
		says:  []string{"WARN [rule:attach-limit]", "1 of max_volumes_per_node 3 taken before the test"},
	},
	{
		name:   "global-snapshots",
		clause: "csi.proto Snapshot.accessible_topology: \"If it is not specified, the CO MAY assume the snapshot is equally usable from all topologies\"",
		shape:  fixed(scopeSnapshots("global")),
		says:   []string{"WARN [rule:requisite] MAY used: usable beyond requisite", "everywhere (no accessible_topology)", "(a global snapshot): no restore lies outside it"},
		skips:  []string{testRestoreOut},
	},
	{
		name:   "prefixed",
		clause: "NodeGetInfoResponse.accessible_topology: keys are the SP's to choose (\"com.example.csi/zone\")",
		world:  "keys: {region: topology.zonepath.csi.dev/region, zone: topology.zonepath.csi.dev/zone}\n" + mustRead("testdata/world.yaml"),
		config: rekey(map[string]string{"topology.kubernetes.io/region": "topology.zonepath.csi.dev/region", "topology.kubernetes.io/zone": "topology.zonepath.csi.dev/zone"}),
	},
	{
		name:   "extra-keys",
		clause: "NodeGetInfoResponse.accessible_topology: a node reports every key of its place, here a rack the segments configured for volumes do not name",
		world:  racksWorld,
		plugin: func(c *plugin.Config) { c.Node.Rack = "rack-1" },
	},
	{
		name:   "zone-only",
		clause: "NodeGetInfoResponse.accessible_topology: one key is as valid as two",
		config: rekey(map[string]string{"topology.kubernetes.io/region": ""}),
		shape:  fixed(zoneOnly),
	},
	{
		name: "late-ready",
		clause: "spec.md CreateSnapshot: after the cut a snapshot still processed (uploading) answers ready_to_use false, and the CO " +
			"\"SHOULD then reissue the same CreateSnapshotRequest periodically until boolean ready_to_use flips to true\"",
		world: "snapshots: {readyAfter: 2s}\n" + mustRead("testdata/world.yaml"),
		says:  []string{"is not ready_to_use when CreateSnapshot returns; waiting up to 5m0s"},
	},
	{
		// Not a personality of the matrix: zonepath always lists and gets
		// snapshots, but a vendor's driver need not.
		name: "no-list-get-snapshots",
		clause: "spec.md: \"It is NOT REQUIRED for a controller plugin to implement the LIST_SNAPSHOTS capability if it supports the CREATE_DELETE_SNAPSHOT capability\"; " +
			"GetSnapshot only with GET_SNAPSHOT",
		shape: fixed(withoutSnapshotReads),
		says:  []string{"neither LIST_SNAPSHOTS nor GET_SNAPSHOT"},
		skips: []string{testConsistent},
	},
	// Issue 32: behaviours of real drivers (verdicts_test.go).
	{
		name:   "regional-volumes",
		clause: "TopologyRequirement.requisite x > n: the SP \"MAY choose the remaining x-n unique topologies from the list of all possible topologies\"",
		// A third segment, outside a volume of zone-a and its replica in
		// zone-b, for the idempotency cases of a place C.
		config: func(c *zpsanity.Config, _ string) {
			c.Segments = append(c.Segments, map[string]string{regionKey: "region-1", zoneKey: "zone-c"})
		},
		shape: fixed(regionalVolumes),
		says:  []string{"WARN [rule:restore] MAY used: volume accessible beyond requisite", "zone=zone-b}] (TopologyRequirement x > n"},
	},
	{
		name:   "ebs-keys",
		clause: "NodeGetInfoResponse.accessible_topology: every key of the node's place; a volume segment of fewer keys is accessible from a node whose keys it agrees with",
		config: ebsConfig,
		shape:  fixed(ebsKeys),
	},
	// Regional volumes played by the driver's own setting
	// (volumes.replicas: 2, driver/README.md) rather than an interceptor:
	// every volume of zone-a has a replica in zone-b. The outage command
	// takes the node's zone, zone-a, down, and the volume stays usable
	// through zone-b: the controller reports it DEGRADED ("usable but is
	// not operating optimally"), not INACCESSIBLE, and the node of zone-a
	// INACCESSIBLE from there. The volume-health rules must pass it.
	{
		name: "regional-volumes-knob",
		clause: "volumes.replicas: 2; VolumeHealthErrorType DEGRADED, \"The volume is usable but is not operating optimally\", for a " +
			"volume with one of its two zones down; INACCESSIBLE is what the CO \"MAY interpret\" as not accessible from all nodes",
		world:  regionalWorld,
		config: withZoneC,
		says: []string{"WARN [rule:restore] MAY used: volume accessible beyond requisite",
			"WARN [rule:health-list] choice the spec leaves open: condition during the outage", "WARN [rule:health-entries] choice the spec leaves open: condition during the outage",
			"WARN [rule:health-consistent] choice the spec leaves open: condition during the outage", "[DEGRADED/"},
		// The node of zone-a finds the volume INACCESSIBLE from there: a
		// new condition, which echoes the controller's DEGRADED.
		never: []string{"node does not echo", "node health during the outage"},
	},
	// EBS's keys played by the driver's own settings (driver/README.md)
	// rather than an interceptor: what the ebs-keys personality of the
	// matrix runs.
	{
		name:   "ebs-keys-knob",
		clause: "keys.omitRegion, keys.nodeZone and keys.nodeOS: NodeGetInfo reports three keys, volumes and snapshots the zone key",
		world:  "keys: {omitRegion: true, nodeZone: " + ebsZoneKey + ", nodeOS: " + osKey + "}\n" + mustRead("testdata/world.yaml"),
		config: ebsConfig,
	},
	{
		name:   "restore-outside-invalid-argument",
		clause: "CreateVolume Errors: INVALID_ARGUMENT \"MUST also be used to indicate when plugin ... cannot create a volume from the requested source\"",
		shape:  fixed(restoreRefusedWith(codes.InvalidArgument)),
		says:   []string{"WARN [rule:restore] choice the spec leaves open: restore outside the snapshot: INVALID_ARGUMENT"},
	},
	{
		name:   "node-health-only-where-staged",
		clause: "NodeGetVolumeHealth Errors: NOT_FOUND, \"does not exist on the node\", for a volume never staged or published there",
		shape:  healthOnlyWhereStaged,
	},
	{
		name: "advisory-attach-limit",
		clause: "csi.proto NodeGetInfoResponse.max_volumes_per_node: what the CO uses to decide; no MUST binds ControllerPublishVolume to refuse at it " +
			"(EBS --reserved-volume-attachments, Cinder): the node reports 2, the controller enforces 3",
		config: func(c *zpsanity.Config, _ string) { c.AttachLimit = 2 },
		shape:  fixed(reportAttachLimit(2)),
		says:   []string{"WARN [rule:attach-limit] choice the spec leaves open: publishes beyond max_volumes_per_node", "3 publishes to node sanity-node succeeded, max_volumes_per_node 2"},
	},
	{
		name:   "attach-limit-127",
		clause: "NodeGetInfoResponse.max_volumes_per_node 127 (GCE PD); ControllerPublishVolume Errors: RESOURCE_EXHAUSTED, Max volumes attached",
		config: func(c *zpsanity.Config, _ string) { c.AttachLimit = 127 },
		plugin: func(c *plugin.Config) { c.MaxVolumesPerNode = 127 },
	},
	{
		name:   "attach-limit-256",
		clause: "NodeGetInfoResponse.max_volumes_per_node 256 (Cinder), the default ceiling of volumes the test creates",
		config: func(c *zpsanity.Config, _ string) { c.AttachLimit = 256 },
		plugin: func(c *plugin.Config) { c.MaxVolumesPerNode = 256 },
	},
	{
		// Not a driver's choice but the vendor's: a limit above the
		// ceiling the test fills skips, saying so, never silently.
		name:   "attach-limit-above-ceiling",
		clause: "NodeGetInfoResponse.max_volumes_per_node 127 with attachLimitCeiling 100",
		config: func(c *zpsanity.Config, _ string) { c.AttachLimit, c.AttachLimitCeiling = 127, 100 },
		plugin: func(c *plugin.Config) { c.MaxVolumesPerNode = 127 },
		says:   []string{"max_volumes_per_node 127 is above the ceiling of 100 the test fills", "raise --zonepath.attach-limit-ceiling"},
		skips:  []string{testAttachLimit},
	},
	{
		// A driver whose volumes attach to one machine at a time, which
		// says so when asked for a MULTI_NODE_* volume.
		name:   "single-node-only",
		clause: "CreateVolume: \"If ANY of the specified volume capabilities are not supported by the SP, the call MUST return the appropriate gRPC error code\"",
		shape:  fixed(refuseMultiNodeModes),
		skips:  []string{testMultiNode},
		says:   []string{"the driver creates no volume of a MULTI_NODE_* access mode"},
	},
	{
		name:   "many-snapshots",
		clause: "ListSnapshots: next_token \"can be used in a subsequent ListSnapshots call to retrieve the next page\", however many pages",
		shape:  fixed(manySnapshots(true)),
	},
}

// regionsWorld is testdata/world.yaml with a second region.
const regionsWorld = `
regions:
- name: region-1
  zones: [{name: zone-a}, {name: zone-b}, {name: zone-c, snapshotQuota: 2}]
- name: region-2
  zones: [{name: zone-d}]
` + sanityNodes

// racksWorld splits testdata/world.yaml's zones into racks.
const racksWorld = `
regions:
- name: region-1
  zones:
  - {name: zone-a, racks: [rack-1, rack-2]}
  - {name: zone-b, racks: [rack-1]}
  - {name: zone-c, racks: [rack-1], snapshotQuota: 2}
nodes:
- {id: sanity-node-a2, zone: zone-a, rack: rack-2}
- {id: sanity-node-b, zone: zone-b, rack: rack-1}
- {id: sanity-node-c, zone: zone-c, rack: rack-1}`

var regionTwo = map[string]string{"topology.kubernetes.io/region": "region-2", "topology.kubernetes.io/zone": "zone-d"}

// TestPersonalities runs the extensions against each compliant shape and
// fails on any failed test or a missing report of the choice seen.
func TestPersonalities(t *testing.T) {
	bin := buildSanity(t, "once per personality")
	for _, p := range personalities {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel() // a driver and a directory of its own, as in TestEveryExtensionIsProven
			res := runAgainst(t, bin, p.world, "rules: []", p.plugin, p.shape, p.config)
			t.Logf("%s (%s): failed %q; %d skipped\n%s", p.name, p.clause, res.failures, len(res.skipped), findings(res.output))
			if len(res.failures) > 0 {
				t.Errorf("a compliant %s driver failed %q\n%s", p.name, res.failures, res.output)
			}
			var skipped []string
			for _, name := range p.skips {
				if res.skippedMatching(name) {
					skipped = append(skipped, name)
				}
			}
			if len(skipped) != len(res.skipped) || len(skipped) != len(p.skips) {
				t.Errorf("skipped %q, want exactly %q", res.skipped, p.skips)
			}
			if strings.Contains(res.output, "not exercised") && len(p.skips) == 0 {
				t.Errorf("every case of the idempotency table should run:\n%s", res.output)
			}
			for _, line := range p.says {
				if !strings.Contains(res.output, line) {
					t.Errorf("summary does not report %q:\n%s", line, res.output)
				}
			}
			for _, line := range p.never {
				if strings.Contains(res.output, line) {
					t.Errorf("summary reports %q:\n%s", line, res.output)
				}
			}
		})
	}
}

// findings are the summary's FAIL lines, each with the check that
// failed, and its WARN and SKIP lines: what the suite saw.
func findings(summary string) string {
	var out []string
	lines := strings.Split(summary, "\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "FAIL [") && i+1 < len(lines):
			out = append(out, l, lines[i+1])
		case strings.HasPrefix(l, "WARN [") || strings.HasPrefix(l, "SKIP ["):
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// scopeSnapshots plays a driver whose snapshots have the given scope
// unless the request names one (snapshots.defaultScope in the topology
// file): zonepath's own snapshotScope parameter, so restores and
// idempotency follow the claim.
func scopeSnapshots(scope string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csi.CreateSnapshotRequest); ok && r.GetParameters()[plugin.ParamSnapshotScope] == "" {
			r = proto.Clone(r).(*csi.CreateSnapshotRequest)
			if r.Parameters == nil {
				r.Parameters = map[string]string{}
			}
			r.Parameters[plugin.ParamSnapshotScope] = scope
			req = r
		}
		return handler(ctx, req)
	}
}

// sourceZoneOnly plays a driver that cuts a snapshot only in its source
// volume's zone (snapshots.sourceZoneOnly): a new snapshot whose requisite
// names no segment of the source's zone is RESOURCE_EXHAUSTED (the
// resources it would need there are missing), otherwise its first copy
// goes to the source's zone; a name it already holds is answered by the
// driver, which looks names up first.
func sourceZoneOnly(testing.TB, *drivertest.Driver) grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	volumes := map[string]*csi.Topology{} // volume ID: its segment
	names := map[string]bool{}            // snapshot names the driver holds
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*csi.CreateSnapshotRequest)
		mu.Lock()
		src, known := volumes[r.GetSourceVolumeId()], names[r.GetName()]
		mu.Unlock()
		if ok && !known && r.GetAccessibilityRequirements() != nil && src != nil {
			if !meetsOne(src, r.GetAccessibilityRequirements().GetRequisite()) {
				return nil, status.Errorf(codes.ResourceExhausted, "snapshots of volume %s can only be cut in its zone %v", r.GetSourceVolumeId(), src.GetSegments())
			}
			r = proto.Clone(r).(*csi.CreateSnapshotRequest)
			r.AccessibilityRequirements.Preferred = append([]*csi.Topology{src}, r.AccessibilityRequirements.Preferred...)
			req = r
		}
		resp, err := handler(ctx, req)
		if err != nil {
			return resp, err
		}
		mu.Lock()
		defer mu.Unlock()
		switch resp := resp.(type) {
		case *csi.CreateVolumeResponse:
			if topo := resp.GetVolume().GetAccessibleTopology(); len(topo) == 1 {
				volumes[resp.GetVolume().GetVolumeId()] = topo[0]
			}
		case *csi.CreateSnapshotResponse:
			names[r.GetName()] = true
		}
		return resp, nil
	}
}

// meetsOne reports whether seg lies within, or contains, one of segs.
func meetsOne(seg *csi.Topology, segs []*csi.Topology) bool {
	for _, s := range segs {
		if carries(seg, s) || carries(s, seg) {
			return true
		}
	}
	return false
}

// carries reports whether a carries every pair of b.
func carries(a, b *csi.Topology) bool {
	for k, v := range b.GetSegments() {
		if a.GetSegments()[k] != v {
			return false
		}
	}
	return true
}

// preattached plays a node that starts with one volume attached, counted
// against its max_volumes_per_node as a root disk is
// (preattachedVolumesPerNode: 1): it publishes a volume of its own to the
// node before the suite runs.
func preattached(t testing.TB, d *drivertest.Driver) grpc.UnaryServerInterceptor {
	ctx := context.Background()
	info, err := d.Plugin.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	vol, err := d.Plugin.CreateVolume(ctx, drivertest.VolumeRequest("root-disk", 1<<20, drivertest.Requisite(info.GetAccessibleTopology())))
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Plugin.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: vol.GetVolume().GetVolumeId(), NodeId: info.GetNodeId(), VolumeCapability: drivertest.MountCapability(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return nil
}

func mustRead(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// rekey renames the keys of every configured segment; a key renamed to ""
// is dropped.
func rekey(names map[string]string) func(*zpsanity.Config, string) {
	re := func(seg map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range seg {
			if n, ok := names[k]; !ok {
				out[k] = v
			} else if n != "" {
				out[n] = v
			}
		}
		return out
	}
	return func(c *zpsanity.Config, _ string) {
		for i := range c.Segments {
			c.Segments[i] = re(c.Segments[i])
		}
		c.ExhaustedSegment = re(c.ExhaustedSegment)
		for i := range c.Nodes {
			c.Nodes[i].Segment = re(c.Nodes[i].Segment)
		}
	}
}

// withoutSnapshotReads plays a driver without LIST_SNAPSHOTS and
// GET_SNAPSHOT: it does not advertise them and answers the calls
// UNIMPLEMENTED.
func withoutSnapshotReads(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	switch req.(type) {
	case *csi.ListSnapshotsRequest, *csi.GetSnapshotRequest:
		return nil, status.Error(codes.Unimplemented, "this driver neither lists nor gets snapshots")
	}
	resp, err := handler(ctx, req)
	if caps, ok := resp.(*csi.ControllerGetCapabilitiesResponse); ok {
		resp = withoutCapabilities(caps, csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS, csi.ControllerServiceCapability_RPC_GET_SNAPSHOT)
	}
	return resp, err
}

// withoutCapabilities is caps without the given ones.
func withoutCapabilities(caps *csi.ControllerGetCapabilitiesResponse, drop ...csi.ControllerServiceCapability_RPC_Type) *csi.ControllerGetCapabilitiesResponse {
	caps = proto.Clone(caps).(*csi.ControllerGetCapabilitiesResponse)
	caps.Capabilities = slices.DeleteFunc(caps.Capabilities, func(c *csi.ControllerServiceCapability) bool {
		return slices.Contains(drop, c.GetRpc().GetType())
	})
	return caps
}

// zoneOnly plays a driver with one topology key, the zone
// (keys.omitRegion): it drops the region key from every segment it
// answers with and, as zone names are unique, puts it back into the
// segments it is asked for.
func zoneOnly(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	regions := map[string]string{"zone-a": "region-1", "zone-b": "region-1", "zone-c": "region-1"}
	if m, ok := req.(proto.Message); ok {
		m = proto.Clone(m)
		eachTopology(m.ProtoReflect(), func(t *csi.Topology) {
			if r, ok := regions[t.GetSegments()[zoneKey]]; ok {
				t.Segments[regionKey] = r
			}
		})
		req = m
	}
	resp, err := handler(ctx, req)
	if m, ok := resp.(proto.Message); ok && err == nil {
		m = decoded(m)
		eachTopology(m.ProtoReflect(), func(t *csi.Topology) { delete(t.Segments, regionKey) })
		resp = m
	}
	return resp, err
}

const (
	regionKey = "topology.kubernetes.io/region"
	zoneKey   = "topology.kubernetes.io/zone"
)

// decoded copies m through its wire form: the driver writes list pages
// as raw bytes, which only a decoded copy shows as fields.
func decoded(m proto.Message) proto.Message {
	data, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	out := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}

// eachTopology calls f on every csi.Topology inside m.
func eachTopology(m protoreflect.Message, f func(*csi.Topology)) {
	if t, ok := m.Interface().(*csi.Topology); ok {
		f(t)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.MessageKind || fd.IsMap():
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				eachTopology(v.List().Get(i).Message(), f)
			}
		default:
			eachTopology(v.Message(), f)
		}
		return true
	})
}
