package sanity_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	zpsanity "github.com/zonepath/zonepath/sanity"
)

// testElsewhere is the test of a snapshot requisite that excludes the
// source volume's segment (rule:requisite).
const testElsewhere = "makes a snapshot usable from a requisite that excludes its source's segment"

// mutants: one driver set-up per MUST issue 32 lists as caught by no check,
// each breaking exactly that MUST, and the rule and test that must fail.
// The MUSTs the rules caught before have theirs in proofs (proof_test.go);
// SPEC-MAP.md names both.
var mutants = []struct {
	name  string
	must  string // the clause the set-up breaks (spec.md v1.13)
	rule  string // the rule label expected to FAIL
	fails string // the test expected to FAIL, the only one
	// The set-up, as in proofs.
	world     string // topology file; default testdata/world.yaml
	config    func(c *zpsanity.Config, dir string)
	plugin    func(*plugin.Config)
	intercept shape
}{
	{
		name: "snapshot-cut-beside-source",
		must: "CreateSnapshot: OK only for a snapshot usable from accessibility_requirements; requisite: usable from at least one of them. " +
			"The driver reads the requisite, cuts the snapshot in its source volume's segment anyway and answers OK",
		rule: "requisite", fails: testElsewhere,
		intercept: besideSource(codes.OK),
	},
	{
		name: "snapshot-topology-refused-failed-precondition",
		must: "CreateSnapshot Errors: RESOURCE_EXHAUSTED when accessibility_requirements is valid but a snapshot cannot be created with " +
			"the specified topology constraints (no exhaustion flags configured). The driver refuses a requisite excluding the source " +
			"with FAILED_PRECONDITION",
		rule: "requisite", fails: testElsewhere,
		config:    noExhaustion,
		intercept: besideSource(codes.FailedPrecondition),
	},
	{
		name: "snapshot-topology-refused-invalid-argument",
		must: "as above; the segment is valid (the driver takes it elsewhere), so not INVALID_ARGUMENT",
		rule: "requisite", fails: testElsewhere,
		config:    noExhaustion,
		intercept: besideSource(codes.InvalidArgument),
	},
	{
		name: "repeat-ok-with-snapshot-elsewhere",
		must: "CreateSnapshot: MUST reply OK for a snapshot usable from accessibility_requirements; an OK says so. The vendor documents " +
			"OK for the same name with a requisite outside the snapshot, and the driver returns the existing snapshot, usable from A only, " +
			"for a requisite naming C",
		rule: "idempotent", fails: testRequirements,
		config:    func(c *zpsanity.Config, _ string) { c.IncompatibleRequirements = "OK" },
		intercept: fixed(existingForAnyRequirement()),
	},
	{
		name: "attach-limit-127-refused-unavailable",
		must: "ControllerPublishVolume Errors: Max volumes attached, the plugin MUST return RESOURCE_EXHAUSTED, at a limit above 64 " +
			"(max_volumes_per_node 127, GCE PD); the driver answers UNAVAILABLE",
		rule: "attach-limit", fails: testAttachLimit,
		config:    func(c *zpsanity.Config, _ string) { c.AttachLimit = 127 },
		plugin:    func(c *plugin.Config) { c.MaxVolumesPerNode = 127 },
		intercept: fixed(publishRefusedWith(codes.Unavailable)),
	},
	{
		name: "attach-limit-127-no-room",
		must: "ControllerPublishVolume Errors: Max volumes attached, \"will fail until at least one of the existing attached volumes " +
			"is detached\", at max_volumes_per_node 127: an unpublish that detaches nothing",
		rule: "attach-limit", fails: testAttachLimit,
		config:    func(c *zpsanity.Config, _ string) { c.AttachLimit = 127 },
		plugin:    func(c *plugin.Config) { c.MaxVolumesPerNode = 127 },
		intercept: fixed(keepFirstUnpublish()),
	},
	// The checks of volume health existed; these prove two clauses no
	// proof broke (SPEC-MAP.md VH-3, VH-7).
	{
		name: "health-list-drops-a-volume",
		must: "ControllerListVolumeHealth: \"The Plugin SHALL return the health information about all the volumes that it knows about\"; " +
			"the first page of every walk leaves out its first entry",
		rule: "health-list", fails: testHealthList,
		intercept: fixed(dropFirstHealthEntry),
	},
	{
		name: "health-list-without-next-token",
		must: "ControllerListVolumeHealthRequest.max_entries: \"the Plugin MUST set next_token in the response\" when more entries follow; " +
			"the driver pages but never says more follow",
		rule: "health-list", fails: testHealthList,
		intercept: fixed(healthWithoutNextToken),
	},
	{
		name: "health-list-without-get",
		must: "ControllerListVolumeHealth: a plugin with LIST_VOLUME_HEALTH \"MUST also have the GET_VOLUME_HEALTH controller capability\"; " +
			"the driver advertises LIST_VOLUME_HEALTH alone",
		rule: "health-list", fails: testHealthList,
		intercept: fixed(hideCapabilities(csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH)),
	},
	{
		name: "group-ready-before-members",
		must: "VolumeGroupSnapshot.ready_to_use: \"If any snapshot in the list ... have ready_to_use set to false, the SP MUST set this field to false\"; " +
			"snapshots ready 2s after the cut, and the group answered ready at once",
		rule: "group", fails: testGroup,
		world:     "snapshots: {readyAfter: 2s}\n" + mustRead("testdata/world.yaml"),
		intercept: fixed(groupReadyAtOnce),
	},
	{
		name: "group-cut-again",
		must: "CreateVolumeGroupSnapshot: \"calls to this function MUST be idempotent ... the group snapshot MUST only be created once\"; " +
			"the same request again cuts another group",
		rule: "group", fails: testGroup,
		intercept: fixed(groupCutAgain()),
	},
	{
		name: "group-refused-unavailable",
		must: "CreateVolumeGroupSnapshot Errors: \"Cannot snapshot multiple volumes together\" is FAILED_PRECONDITION (\"the plugin MUST return the " +
			"specified gRPC error code\"); the driver refuses a group of volumes of two segments with UNAVAILABLE",
		rule: "group", fails: testGroup,
		intercept: fixed(refuseGroupsWith(codes.Unavailable)),
	},
	// Issue 32, "What to build" 4: clauses SPEC-MAP.md listed as gaps.
	{
		name: "modify-repeat-refused",
		must: "ControllerModifyVolume: \"This operation MUST be idempotent\"; the driver applies the first call and answers the same " +
			"request again FAILED_PRECONDITION, as one that takes a repeat for a conflicting modification",
		rule: "modify-idempotent", fails: testModifyTwice,
		intercept: fixed(refuseRepeatedModify()),
	},
	{
		name: "storage-health-unimplemented",
		must: "NodeGetStorageHealth: \"A Node Plugin MUST implement this RPC call if it has GET_STORAGE_HEALTH node capability\"; " +
			"the node advertises it and answers UNIMPLEMENTED",
		rule: "storage-health", fails: testStorageHealth,
		intercept: fixed(storageHealthUnimplemented),
	},
	{
		name: "storage-health-repeated",
		must: "StorageBackendHealth.reason: \"The Plugin MUST NOT return multiple StorageBackendHealth messages with the same " +
			"(status, reason, volume_capability) combination\"; every entry is sent twice",
		rule: "storage-health", fails: testStorageHealth,
		intercept: fixed(repeatStorageHealth),
	},
	{
		name: "health-path-127-bytes",
		must: "NodeGetVolumeHealthRequest.volume_publish_path: \"SP MUST accept a max path length of at least 128 bytes\"; " +
			"the node refuses a path of 128 bytes or more as INVALID_ARGUMENT",
		rule: "health-paths", fails: testHealthPaths,
		intercept: fixed(refuseLongHealthPaths(minHealthPath - 1)),
	},
}

// minHealthPath is the path length NodeGetVolumeHealth MUST accept.
const minHealthPath = 128

// noExhaustion configures no exhausted segment: what sanity checks of
// RESOURCE_EXHAUSTED without the exhaustion flags.
func noExhaustion(c *zpsanity.Config, _ string) {
	c.ExhaustedSegment, c.ExhaustAfter = nil, 0
}

// TestMutants runs the extensions against each mutant and checks that
// exactly the named test fails, and that it carries the named rule.
func TestMutants(t *testing.T) {
	bin := buildSanity(t, "once per mutant")
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			res := runAgainst(t, bin, m.world, "rules: []", m.plugin, m.intercept, m.config)
			t.Logf("%s (%s): failed %q\n%s", m.name, m.must, res.failures, findings(res.output))
			if got := res.failedMatching(); len(got) != 1 || got[0] != m.fails {
				t.Fatalf("failed tests = %q, want only %q\nall failures: %s", got, m.fails, res.failures)
			}
			if !strings.Contains(res.output, "FAIL [rule:"+m.rule+"]") {
				t.Errorf("the summary names no failure of rule:%s:\n%s", m.rule, res.output)
			}
		})
	}
}

// besideSource plays a driver that validates a snapshot's requisite (a
// requisite naming no place of its world is the driver's to refuse) but,
// for a new snapshot whose requisite leaves out its source volume's
// segment, either cuts it beside the source anyway (refuse OK: the
// requisite is replaced by the source's segment) or refuses with code
// refuse. Every other request reaches the driver unchanged.
func besideSource(refuse codes.Code) shape {
	return func(_ testing.TB, d *drivertest.Driver) grpc.UnaryServerInterceptor {
		var mu sync.Mutex
		volumes := map[string][]*csi.Topology{} // volume ID: its accessible_topology
		names := map[string]bool{}              // snapshot names asked for
		return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if r, ok := req.(*csi.CreateSnapshotRequest); ok {
				mu.Lock()
				src, seen := volumes[r.GetSourceVolumeId()], names[r.GetName()]
				names[r.GetName()] = true
				mu.Unlock()
				requisite := r.GetAccessibilityRequirements().GetRequisite()
				if _, err := d.Config.Topology.Candidates(r.GetAccessibilityRequirements()); !seen && err == nil && len(src) > 0 && len(requisite) > 0 &&
					!slices.ContainsFunc(src, func(s *csi.Topology) bool { return meetsOne(s, requisite) }) {
					if refuse != codes.OK {
						return nil, status.Error(refuse, "snapshots are cut beside their source volume")
					}
					r = proto.Clone(r).(*csi.CreateSnapshotRequest)
					r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: src}
					req = r
				}
			}
			resp, err := handler(ctx, req)
			if v, ok := resp.(*csi.CreateVolumeResponse); ok && err == nil {
				mu.Lock()
				volumes[v.GetVolume().GetVolumeId()] = v.GetVolume().GetAccessibleTopology()
				mu.Unlock()
			}
			return resp, err
		}
	}
}

// existingForAnyRequirement plays a driver that answers a known snapshot
// name and source with the existing snapshot, OK, where zonepath finds
// the requirements incompatible (ALREADY_EXISTS): it returns the snapshot
// as the first request got it, usable from where it is, not from the new
// requisite.
func existingForAnyRequirement() grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	first := map[string]*csi.CreateSnapshotResponse{} // name: the first OK
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		r, ok := req.(*csi.CreateSnapshotRequest)
		if !ok {
			return resp, err
		}
		mu.Lock()
		defer mu.Unlock()
		prev := first[r.GetName()]
		switch {
		case err == nil && prev == nil:
			first[r.GetName()] = resp.(*csi.CreateSnapshotResponse)
		case status.Code(err) == codes.AlreadyExists && prev != nil && prev.GetSnapshot().GetSourceVolumeId() == r.GetSourceVolumeId():
			return prev, nil
		}
		return resp, err
	}
}

// dropFirstHealthEntry plays a driver whose ControllerListVolumeHealth
// leaves the first entry of a walk's first page out.
func dropFirstHealthEntry(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	r, ok := req.(*csi.ControllerListVolumeHealthRequest)
	if list, isList := resp.(*csi.ControllerListVolumeHealthResponse); ok && isList && err == nil && r.GetStartingToken() == "" && len(list.GetEntries()) > 0 {
		list = proto.Clone(list).(*csi.ControllerListVolumeHealthResponse)
		list.Entries = list.Entries[1:]
		resp = list
	}
	return resp, err
}

// healthWithoutNextToken plays a driver whose ControllerListVolumeHealth
// honours max_entries but never returns a next_token.
func healthWithoutNextToken(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if list, ok := resp.(*csi.ControllerListVolumeHealthResponse); ok && err == nil {
		list = proto.Clone(list).(*csi.ControllerListVolumeHealthResponse)
		list.NextToken = ""
		resp = list
	}
	return resp, err
}

// hideCapabilities plays a driver that does not advertise the given
// controller capabilities.
func hideCapabilities(hidden ...csi.ControllerServiceCapability_RPC_Type) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if caps, ok := resp.(*csi.ControllerGetCapabilitiesResponse); ok && err == nil {
			resp = withoutCapabilities(caps, hidden...)
		}
		return resp, err
	}
}

// groupReadyAtOnce plays a driver whose CreateVolumeGroupSnapshot answers
// the group ready_to_use whatever its members say.
func groupReadyAtOnce(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := resp.(*csi.CreateVolumeGroupSnapshotResponse); ok && err == nil {
		r = proto.Clone(r).(*csi.CreateVolumeGroupSnapshotResponse)
		r.GroupSnapshot.ReadyToUse = true
		resp = r
	}
	return resp, err
}

// groupCutAgain plays a driver that cuts a new group for each
// CreateVolumeGroupSnapshot, a name it has seen included: the second call
// of a name is sent on with a name of its own.
func groupCutAgain() grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csi.CreateVolumeGroupSnapshotRequest); ok {
			mu.Lock()
			seen[r.GetName()]++
			n := seen[r.GetName()]
			mu.Unlock()
			if n > 1 {
				r = proto.Clone(r).(*csi.CreateVolumeGroupSnapshotRequest)
				r.Name = fmt.Sprintf("%s-again-%d", r.GetName(), n)
				req = r
			}
		}
		return handler(ctx, req)
	}
}

// refuseGroupsWith plays a driver that cannot snapshot volumes together
// and says so with code c.
func refuseGroupsWith(c codes.Code) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if _, ok := req.(*csi.CreateVolumeGroupSnapshotRequest); ok {
			return nil, status.Error(c, "these volumes cannot be snapshotted together")
		}
		return handler(ctx, req)
	}
}

// refuseRepeatedModify plays a driver that applies a
// ControllerModifyVolume and refuses the same request for the same
// volume again with FAILED_PRECONDITION.
func refuseRepeatedModify() grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	applied := map[string]bool{} // volume ID and parameters
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*csi.ControllerModifyVolumeRequest)
		if !ok {
			return handler(ctx, req)
		}
		key := fmt.Sprint(r.GetVolumeId(), r.GetMutableParameters())
		mu.Lock()
		repeat := applied[key]
		mu.Unlock()
		if repeat {
			return nil, status.Error(codes.FailedPrecondition, "a modification of this volume is already applied")
		}
		resp, err := handler(ctx, req)
		if err == nil {
			mu.Lock()
			applied[key] = true
			mu.Unlock()
		}
		return resp, err
	}
}

// storageHealthUnimplemented plays a node that advertises
// GET_STORAGE_HEALTH and does not implement NodeGetStorageHealth.
func storageHealthUnimplemented(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if _, ok := req.(*csi.NodeGetStorageHealthRequest); ok {
		return nil, status.Error(codes.Unimplemented, "NodeGetStorageHealth")
	}
	return handler(ctx, req)
}

// repeatStorageHealth plays a node that reports each storage condition
// twice.
func repeatStorageHealth(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := resp.(*csi.NodeGetStorageHealthResponse); ok && err == nil && len(r.GetBackendHealth()) > 0 {
		r = proto.Clone(r).(*csi.NodeGetStorageHealthResponse)
		r.BackendHealth = append(r.BackendHealth, r.BackendHealth...)
		resp = r
	}
	return resp, err
}

// refuseLongHealthPaths plays a node whose NodeGetVolumeHealth takes
// paths of at most max bytes and refuses longer ones as INVALID_ARGUMENT.
func refuseLongHealthPaths(max int) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csi.NodeGetVolumeHealthRequest); ok && (len(r.GetVolumePublishPath()) > max || len(r.GetStagingTargetPath()) > max) {
			return nil, status.Errorf(codes.InvalidArgument, "paths longer than %d bytes are not supported", max)
		}
		return handler(ctx, req)
	}
}
