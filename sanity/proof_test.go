package sanity_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
	zpsanity "github.com/zonepath/zonepath/sanity"
)

// The extension tests, by the words that identify each in its description.
const (
	testCapability    = "returns accessible_topology only with SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"
	testCapSnapshots  = "advertises SNAPSHOT_ACCESSIBILITY_CONSTRAINTS only with CREATE_DELETE_SNAPSHOT"
	testRequisite     = "makes a snapshot usable from its requisite"
	testPreferred     = "prefers the first preferred segment"
	testConsistent    = "returns the same accessible_topology from CreateSnapshot, ListSnapshots and GetSnapshot"
	testExhausted     = "returns RESOURCE_EXHAUSTED for a valid but unsatisfiable requisite"
	testIdempotent    = "is idempotent: the same name and requirements"
	testOtherSource   = "rejects the same name with another source as ALREADY_EXISTS"
	testRequirements  = "Snapshot topology [zonepath] answers the same name with other requirements by the spec's words"
	testUnknown       = "Snapshot topology [zonepath] answers a requisite naming no topology of the driver"
	testVolumeReuse   = "Volume topology [zonepath] answers the same name with other requirements by the spec's words"
	testVolumeUnknown = "Volume topology [zonepath] answers a requisite naming no topology of the driver"
	testRestoreIn     = "restores inside the snapshot's topology"
	testRestoreOut    = "refuses a restore whose requisite lies entirely outside"
	testUnconstrained = "restores a snapshot cut without requirements where its accessible_topology says"
	testAttachLimit   = "honours max_volumes_per_node"
	testKeys          = "reports snapshot topology keys NodeGetInfo does not report"
	testGroup         = "returns each group snapshot member with the group's ID and one accessible_topology"

	testHealthController = "answers ControllerGetVolumeHealth: INVALID_ARGUMENT"
	testHealthNode       = "answers NodeGetVolumeHealth: INVALID_ARGUMENT"
	testHealthList       = "pages ControllerListVolumeHealth"
	testHealthEntries    = "reports each (status, reason) of a volume at most once"
	testHealthConsistent = "reports the health of a volume staged and published on the node"
	testHealthPaths      = "answers NodeGetVolumeHealth for a volume published at a target path of 128 bytes"
	testStorageHealth    = "answers NodeGetStorageHealth with the capability"
	testModifyTwice      = "modifies a volume twice with the same mutable_parameters"

	testMultiNode       = "publishes a volume of each MULTI_NODE_* access mode it creates to two nodes"
	testSingleNode      = "refuses a second node for a volume of SINGLE_NODE_WRITER"
	testPublishTopology = "refuses a publish to a node outside the volume's accessible_topology"
)

// notModifiable is what the summary says of the idempotency table's
// mutable-parameter retry against a driver without MODIFY_VOLUME.
const notModifiable = "retry-other-mutable-parameters: not exercised: MODIFY_VOLUME not advertised"

const (
	zoneB   = `'[{"segments": {"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-b"}}]'`
	zonesAB = `'[{"segments": {"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-a"}},` +
		` {"segments": {"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-b"}}]'`
	zonesBC = `'[{"segments": {"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-b"}},` +
		` {"segments": {"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-c"}}]'`
	zoneC   = `'[{"segments": {"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-c"}}]'`
	region1 = `'[{"segments": {"topology.kubernetes.io/region": "region-1"}}]'`
)

// proofs: each breaks exactly one rule, by a fault rule in the driver or a
// setting that contradicts the driver, and names the one test that must
// fail. sanity/README.md lists them.
var proofs = []struct {
	name      string
	rules     string                               // fault rules for the driver
	world     string                               // topology file; default testdata/world.yaml
	config    func(c *zpsanity.Config, dir string) // changes to testdata/zonepath.yaml; dir holds faults.yaml
	plugin    func(*plugin.Config)                 // changes to the driver
	fails     string                               // the test that must fail; "" none
	alsoFails string                               // a second test that must fail
	says      string                               // a line the summary must print: a WARN finding, a CASE verdict
	// intercept, when set, stands between the suite and the driver: a
	// driver that answers some calls its own (wrong) way.
	intercept shape
}{
	{name: "correct driver"},
	{name: "accessible_topology without the capability", fails: testCapability, rules: `
- name: hide-plugin-capabilities
  match: {rpc: GetPluginCapabilities}
  action: {mutate: {clear: [capabilities]}}`},
	// Its controller capabilities are all hidden, MODIFY_VOLUME too, so the
	// retry with new mutable parameters must say it did not run.
	{name: "capability without CREATE_DELETE_SNAPSHOT", fails: testCapSnapshots, says: notModifiable, rules: `
- name: hide-controller-capabilities
  match: {rpc: ControllerGetCapabilities}
  action: {mutate: {clear: [capabilities]}}`},
	{name: "preferred ignored (a SHOULD: reported, not failed)", says: "WARN [rule:preferred]", rules: `
- name: snapshot-not-in-preferred
  match: {rpc: CreateSnapshot, name: "zp-preferred*"}
  action: {mutate: {set: {snapshot.accessible_topology: '[{"segments": {"topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": "zone-a"}}]'}}}`},
	{name: "requisite ignored under a preferred list", fails: testPreferred, rules: `
- name: preferred-snapshot-outside-requisite
  match: {rpc: CreateSnapshot, name: "zp-preferred*"}
  action: {mutate: {set: {snapshot.accessible_topology: ` + zoneC + `}}}`},
	{name: "same name and another source accepted", fails: testOtherSource, rules: `
- name: other-source-wrong-code
  match: {rpc: CreateSnapshot, name: "zp-other-source*", nth: 2}
  action: {code: Internal}`},
	{name: "requisite ignored", fails: testRequisite, rules: `
- name: snapshot-outside-requisite
  match: {rpc: CreateSnapshot, name: "zp-requisite*"}
  action: {mutate: {set: {snapshot.accessible_topology: ` + zoneB + `}}}`},
	{name: "snapshot usable from more zones than requisite (x > n: allowed, reported)", says: "WARN [rule:requisite]", rules: `
- name: snapshot-beyond-requisite
  match: {rpc: CreateSnapshot, name: "zp-requisite*"}
  action: {mutate: {set: {snapshot.accessible_topology: ` + zonesAB + `}}}`},
	{name: "snapshot usable from the requisite's whole region (allowed, reported)", says: "WARN [rule:requisite]", rules: `
- name: snapshot-region-wide
  match: {rpc: CreateSnapshot, name: "zp-requisite*"}
  action: {mutate: {set: {snapshot.accessible_topology: ` + region1 + `}}}`},
	{name: "snapshot without topology for a requisite: usable everywhere (allowed, reported)", says: "WARN [rule:requisite]", rules: `
- name: snapshot-everywhere
  match: {rpc: CreateSnapshot, name: "zp-requisite*"}
  action: {mutate: {clear: [snapshot.accessible_topology]}}`},
	{name: "GetSnapshot drops accessible_topology", fails: testConsistent, alsoFails: testGroup, rules: `
- name: get-drops-topology
  match: {rpc: GetSnapshot}
  action: {mutate: {clear: [snapshot.accessible_topology]}}`},
	{name: "no GET_SNAPSHOT, and ListSnapshots drops accessible_topology", fails: testConsistent, alsoFails: testGroup, intercept: fixed(listWithoutTopology)},
	{name: "group members without the group's ID", fails: testGroup, intercept: fixed(groupWithoutIDs)},
	{name: "wrong code instead of RESOURCE_EXHAUSTED", fails: testExhausted, rules: `
- name: exhausted-as-unavailable
  match: {rpc: CreateSnapshot, segment: {topology.kubernetes.io/zone: zone-c}, nth: 3, count: 1}
  action: {code: Unavailable}`},
	{name: "OK instead of RESOURCE_EXHAUSTED", fails: testExhausted, world: `
regions:
- name: region-1
  zones: [{name: zone-a}, {name: zone-b}, {name: zone-c}]
` + sanityNodes},
	{name: "exhausted from the start, lifted by a command", config: liftBy("printf 'rules: []\\n' > faults.yaml.tmp && mv faults.yaml.tmp faults.yaml"), rules: exhaustZoneC},
	{name: "still exhausted after the lift", fails: testExhausted, config: liftBy("true"), rules: exhaustZoneC},
	{name: "non-idempotent CreateSnapshot", fails: testIdempotent, rules: `
- name: second-reply-other-id
  match: {rpc: CreateSnapshot, name: "zp-idempotent*", nth: 2}
  action: {mutate: {set: {snapshot.snapshot_id: zps-someone-else}}}`},
	{name: "documented choice for other requirements not kept", fails: testRequirements,
		config: func(c *zpsanity.Config, _ string) { c.IncompatibleRequirements = "OK" }},
	{name: "snapshot usable beyond the requisite refused, as before issue 25", fails: testRequirements, rules: `
- name: refuse-snapshot-usable-beyond-requisite
  match: {rpc: CreateSnapshot, name: "zp-snapshot-requisite-is-its-other-place*", nth: 2}
  action: {code: AlreadyExists}`},
	{name: "a retry with new mutable parameters refused, as before issue 35", fails: testVolumeReuse, rules: `
- name: refuse-retry-with-new-mutable-parameters
  match: {rpc: CreateVolume, name: "zp-volume-retry-other-mutable-parameters*", nth: 2}
  action: {code: AlreadyExists}`},
	{name: "without MODIFY_VOLUME the mutable-parameter retry says it did not run", says: notModifiable,
		plugin: func(c *plugin.Config) { c.DisableModifyVolume = true }},
	{name: "no wideSnapshotParameters: the wide cases say they did not run", says: "usable-beyond-requisite: not exercised: no wideSnapshotParameters configured",
		config: func(c *zpsanity.Config, _ string) { c.WideSnapshotParameters = nil }},
	{name: "region-wide snapshots for the wide cases (snapshotScope=region, a requisite covering part of a region)",
		config: func(c *zpsanity.Config, _ string) {
			c.WideSnapshotParameters = map[string]string{plugin.ParamSnapshotScope: "region"}
		}},
	{name: "unknown topology answered INTERNAL", fails: testUnknown, rules: `
- name: unknown-zone-internal
  match: {rpc: CreateSnapshot, name: "zp-snapshot-new-unknown-requisite*"}
  action: {code: Internal}`},
	{name: "unknown topology answered RESOURCE_EXHAUSTED (the other reading: accepted, reported)", says: "pass, the other reading; got ResourceExhausted", rules: `
- name: unknown-zone-exhausted
  match: {rpc: CreateSnapshot, name: "zp-snapshot-new-unknown-requisite*"}
  action: {code: ResourceExhausted}`},
	{name: "unknown requisite ignored: the snapshot placed elsewhere, or the existing one returned", fails: testRequirements, alsoFails: testUnknown, intercept: fixed(ignoreUnknownRequisite)},
	{name: "volume accessible beyond the requisite refused", fails: testVolumeReuse, rules: `
- name: refuse-volume-wider-requisite
  match: {rpc: CreateVolume, name: "zp-volume-wider-requisite*", nth: 2}
  action: {code: AlreadyExists}`},
	{name: "unknown volume topology answered INTERNAL", fails: testVolumeUnknown, rules: `
- name: unknown-zone-volume-internal
  match: {rpc: CreateVolume, name: "zp-volume-new-unknown-requisite*"}
  action: {code: Internal}`},
	// A snapshot that never becomes ready_to_use cannot be restored
	// (csi.proto Snapshot.ready_to_use: "ready to use as a
	// volume_content_source"): the restore test waits readyTimeout, then
	// fails saying so.
	{name: "snapshot never ready_to_use", fails: testUnconstrained, says: "did not become ready_to_use within 2s",
		config: func(c *zpsanity.Config, _ string) { c.ReadyTimeout.Duration = 2 * time.Second }, rules: `
- name: never-ready
  match: {rpc: CreateSnapshot, name: "zp-unconstrained*"}
  action: {mutate: {set: {snapshot.ready_to_use: false}}}`},
	{name: "restore placed outside the snapshot", fails: testRestoreIn, rules: `
- name: restore-elsewhere
  match: {rpc: CreateVolume, name: "zp-restored*"}
  action: {mutate: {set: {volume.accessible_topology: ` + zoneB + `}}}`},
	{name: "snapshot claims a zone it cannot be restored into", fails: testRestoreIn, rules: `
- name: snapshot-claims-zone-b
  match: {rpc: CreateSnapshot, name: "zp-restore-snapshot*"}
  action: {mutate: {set: {snapshot.accessible_topology: ` + zonesAB + `}}}`},
	{name: "topology reported only when requirements are given", fails: testUnconstrained, rules: `
- name: unconstrained-snapshot-everywhere
  match: {rpc: CreateSnapshot, name: "zp-unconstrained*"}
  action: {mutate: {clear: [snapshot.accessible_topology]}}`},
	{name: "restore without requirements placed outside the snapshot", fails: testUnconstrained, rules: `
- name: unconstrained-restore-elsewhere
  match: {rpc: CreateVolume, name: "zp-unconstrained-restored*"}
  action: {mutate: {set: {volume.accessible_topology: ` + zoneB + `}}}`},
	{name: "restore outside the snapshot with a wrong code", fails: testRestoreOut, rules: `
- name: restore-outside-internal
  match: {rpc: CreateVolume, name: "zp-restored*", segment: {topology.kubernetes.io/zone: zone-b}}
  action: {code: Internal}`},
	{name: "restore outside the snapshot refused with INVALID_ARGUMENT (Source incompatible: allowed, reported)", says: "WARN [rule:restore] choice the spec leaves open: restore outside the snapshot: INVALID_ARGUMENT",
		intercept: fixed(restoreRefusedWith(codes.InvalidArgument))},
	{name: "restore outside the snapshot refused with INTERNAL", fails: testRestoreOut, intercept: fixed(restoreRefusedWith(codes.Internal))},
	{name: "regional restore accessible from two zones, neither in its requisite", fails: testRestoreIn, rules: `
- name: restore-in-two-other-zones
  match: {rpc: CreateVolume, name: "zp-restored*"}
  action: {mutate: {set: {volume.accessible_topology: ` + zonesBC + `}}}`},
	// A node reporting 2 while the driver enforces 3 is no longer a
	// rule-breaker (issue 32): no MUST binds ControllerPublishVolume to
	// max_volumes_per_node; personality advisory-attach-limit passes it.
	{name: "negative max_volumes_per_node (csi.proto: MUST NOT set negative values)", fails: testAttachLimit,
		config: func(c *zpsanity.Config, _ string) { c.AttachLimit = 0 }, rules: `
- name: report-a-negative-limit
  match: {rpc: NodeGetInfo}
  action: {mutate: {set: {max_volumes_per_node: -1}}}`},
	{name: "the publish past the limit refused with UNAVAILABLE, not RESOURCE_EXHAUSTED", fails: testAttachLimit,
		intercept: fixed(publishRefusedWith(codes.Unavailable))},
	{name: "an unpublish that makes no room", fails: testAttachLimit, intercept: fixed(keepFirstUnpublish())},
	{name: "snapshot keys NodeGetInfo omits (a node label set otherwise may match: reported)", says: "WARN [rule:topology-keys] choice the spec leaves open: snapshot key not reported by NodeGetInfo", rules: `
- name: node-without-region
  match: {rpc: NodeGetInfo}
  action: {mutate: {set: {accessible_topology: '{"segments": {"topology.kubernetes.io/zone": "zone-a"}}'}}}`},
	{name: "without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", plugin: func(c *plugin.Config) { c.DisableSnapshotAccessibility = true }},
	{name: "controller health for a deleted volume", fails: testHealthController, intercept: fixed(controllerHealthyWhenUnknown)},
	{name: "node health for a deleted volume", fails: testHealthNode, intercept: fixed(nodeHealthyWhenUnknown)},
	{name: "health list ignores max_entries", fails: testHealthList, intercept: fixed(listHealthUnpaged)},
	{name: "health list accepts a foreign starting_token", fails: testHealthList, intercept: fixed(listHealthAnyToken)},
	{name: "health entries repeated", fails: testHealthEntries, intercept: fixed(repeatHealthEntries)},
	{name: "healthy volume listed (a SHOULD: reported, not failed)", says: "WARN [rule:health-list] SHOULD not met: healthy volume listed", intercept: fixed(listHealthyToo)},
	{name: "fresh volume reported DEGRADED (a SHOULD: reported, not failed)", says: "WARN [rule:health-codes] SHOULD not met: health of a fresh volume", intercept: fixed(degradedAtFirst())},
	{name: "node health NOT_FOUND for a volume staged and published on it", fails: testHealthConsistent, alsoFails: testHealthPaths, intercept: fixed(nodeHealthNotFound)},
	{name: "a snapshot missing from a list of over 10,000", fails: testConsistent, alsoFails: testGroup, intercept: fixed(manySnapshots(false))},
	{name: "node healthy while the controller says INACCESSIBLE (the CO MAY interpret: reported)", says: "WARN [rule:health-consistent] choice the spec leaves open: node does not echo INACCESSIBLE", rules: nodeSeesNoOutage},
	// Regional volumes (volumes.replicas: 2): the outage of the node's
	// zone leaves a volume DEGRADED, usable through its replica, and the
	// health rules still catch what breaks them.
	{name: "regional: node healthy while the controller says DEGRADED (reported)", says: "WARN [rule:health-consistent] choice the spec leaves open: node does not echo DEGRADED",
		world: regionalWorld, config: withZoneC, rules: nodeSeesNoOutage},
	{name: "regional: fresh volume reported DEGRADED, then DEGRADED by the outage (a SHOULD: reported, not failed)", says: "WARN [rule:health-codes] SHOULD not met: health of a fresh volume",
		world: regionalWorld, config: withZoneC, intercept: fixed(degradedAtFirst())},
	{name: "regional: health entries repeated", fails: testHealthEntries, world: regionalWorld, config: withZoneC, intercept: fixed(repeatHealthEntries)},
	{name: "regional: health list ignores max_entries", fails: testHealthList, world: regionalWorld, config: withZoneC, intercept: fixed(listHealthUnpaged)},
	// A node whose storage health says nothing of the outage keeps every
	// MUST (backend_health is OPTIONAL): reported, not failed.
	{name: "node storage health silent during the outage (reported)", says: "WARN [rule:storage-health] choice the spec leaves open: node storage health during the outage", rules: `
- name: node-storage-sees-no-outage
  match: {rpc: NodeGetStorageHealth}
  action: {mutate: {clear: [backend_health]}}`},
	// Issue 33: shared access (sharedaccess.go, sharedaccess_test.go).
	{name: "a second node refused whatever the access mode", fails: testMultiNode, intercept: fixed(oneNodeOnly())},
	{name: "a SINGLE_NODE_WRITER volume published to a second node", fails: testSingleNode, intercept: fixed(publishAsMultiWriter)},
	{name: "a second node of a SINGLE_NODE_WRITER volume refused with ALREADY_EXISTS", fails: testSingleNode, intercept: fixed(secondNodeRefusedWith(codes.AlreadyExists))},
	{name: "the refusal of a second node names no node (a SHOULD: reported, not failed)", says: "WARN [rule:single-node] SHOULD not met: node of the publication not named",
		intercept: fixed(secondNodeRefusedWith(codes.FailedPrecondition))},
	{name: "a publish to a node of another zone answered OK", fails: testPublishTopology, intercept: fixed(publishAnywhere)},
	// Issue 32: DeleteVolumeGroupSnapshot's snapshot_ids (SPEC-MAP.md GS-26, GS-28).
	{name: "group deleted whatever its snapshot_ids (a SHOULD: reported, not failed)", says: "WARN [rule:group] SHOULD not met: group snapshot_ids mismatch",
		intercept: fixed(groupDeleteIgnoresList())},
}

// sanityNodes are the nodes of testdata/world.yaml besides the one under
// test, for a world of the same zones written here.
const sanityNodes = `nodes:
- {id: sanity-node-a2, zone: zone-a}
- {id: sanity-node-b, zone: zone-b}
- {id: sanity-node-c, zone: zone-c}
`

// nodeSeesNoOutage makes the node report every volume healthy.
const nodeSeesNoOutage = `
- name: node-sees-no-outage
  match: {rpc: NodeGetVolumeHealth}
  action: {mutate: {clear: [volume_health.health_statuses]}}`

// regionalWorld is testdata/world.yaml with every volume in two zones of
// region-1 (driver/README.md, volumes.replicas): a volume of the node's
// zone-a has its replica in zone-b, so the outage of zone-a leaves it
// DEGRADED, not INACCESSIBLE.
var regionalWorld = "volumes: {replicas: 2}\n" + mustRead("testdata/world.yaml")

// withZoneC configures zone-c, outside a regional volume of zone-a and its
// replica in zone-b, for the idempotency cases of a place C.
func withZoneC(c *zpsanity.Config, _ string) {
	c.Segments = append(c.Segments, map[string]string{regionKey: "region-1", zoneKey: "zone-c"})
}

// exhaustZoneC makes zone-c refuse every snapshot until the rules change.
const exhaustZoneC = `
- name: zone-c-exhausted
  match: {rpc: CreateSnapshot, segment: {topology.kubernetes.io/zone: zone-c}}
  action: {code: ResourceExhausted, message: zone-c quota}`

// liftBy configures a segment exhausted from the start, lifted by cmd run
// in the driver's directory.
func liftBy(cmd string) func(*zpsanity.Config, string) {
	return func(c *zpsanity.Config, dir string) {
		c.ExhaustAfter = 0
		c.LiftCommand = "cd " + dir + " && " + cmd
		c.LiftTimeout = metav1.Duration{Duration: 3 * time.Second}
	}
}

// TestEveryExtensionIsProven runs the extensions (bin/zonepath-sanity with
// --zonepath.upstream=false) against a driver breaking one rule per case
// and checks that exactly the named test fails.
func TestEveryExtensionIsProven(t *testing.T) {
	bin := buildSanity(t, "once per rule")
	for _, p := range proofs {
		t.Run(p.name, func(t *testing.T) {
			// Each case serves a driver of its own in a directory of its own and
			// runs the suite as a process of its own: nothing is shared.
			t.Parallel()
			res := runAgainst(t, bin, p.world, "rules:"+orEmpty(p.rules), p.plugin, p.intercept, p.config)
			want := slices.DeleteFunc([]string{p.fails, p.alsoFails}, func(s string) bool { return s == "" })
			sort.Strings(want)
			t.Logf("failed: %q; %d skipped\n%s", res.failures, len(res.skipped), findings(res.output))
			if got := res.failedMatching(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("failed tests = %q, want %q\nall failures: %s", got, want, res.failures)
			}
			if p.says != "" && !strings.Contains(res.output, p.says) {
				t.Errorf("summary does not report %q:\n%s", p.says, res.output)
			}
			if p.name == "correct driver" && (len(res.skipped) > 0 || strings.Contains(res.output, "WARN")) {
				t.Errorf("the correct driver should exercise every extension, skipped: %q", res.skipped)
			}
			if strings.Contains(res.output, "not exercised") && !strings.Contains(p.says, "not exercised") {
				t.Errorf("every case of the idempotency table should run:\n%s", res.output)
			}
			if p.name == "without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS" {
				for _, name := range []string{testRequisite, testConsistent, testExhausted, testRequirements, testUnknown, testRestoreIn, testUnconstrained, testKeys} {
					if !res.skippedMatching(name) {
						t.Errorf("%q ran without the capability; it must skip", name)
					}
				}
			}
		})
	}
}

// runAgainst serves the driver with the given world, fault rules, changes
// and shape, and runs the extensions against it with testdata/zonepath.yaml
// changed by config (given the driver's directory).
func runAgainst(t *testing.T, bin, world, rules string, change func(*plugin.Config), sh shape, config func(*zpsanity.Config, string)) result {
	t.Helper()
	dir := t.TempDir()
	cfg := baseConfig(t)
	outageCommands(t, &cfg, dir, worldOrDefault(t, world))
	if config != nil {
		config(&cfg, dir)
	}
	return runSanity(t, bin, serveDriver(t, dir, world, rules, change, sh), dir, cfg)
}

// outageCommands configures the volume health tests' outage: the zone of
// the driver's node (the world's first) goes down by an outage fault rule
// (driver/faults/README.md) added to the driver's fault file in dir, and
// comes back with the file as it was.
func outageCommands(t *testing.T, c *zpsanity.Config, dir, worldYAML string) {
	t.Helper()
	topo, err := world.Parse([]byte(worldYAML))
	if err != nil {
		t.Fatal(err)
	}
	seg, err := json.Marshal(topo.Segment(0))
	if err != nil {
		t.Fatal(err)
	}
	rule := fmt.Sprintf("- {\"name\": \"zp-sanity-outage\", \"match\": {\"segment\": %s}, \"action\": {\"outage\": true}}\n", seg)
	if err := os.WriteFile(filepath.Join(dir, "outage-rule.yaml"), []byte(rule), 0o600); err != nil {
		t.Fatal(err)
	}
	c.OutageCommand = "cd '" + dir + "'" + ` && cp faults.yaml faults.before && { sed 's/^rules: \[\]$/rules:/' faults.before; echo; cat outage-rule.yaml; } > faults.tmp && mv faults.tmp faults.yaml`
	c.RecoverCommand = "cd '" + dir + "' && mv faults.before faults.yaml"
	c.OutageTimeout = metav1.Duration{Duration: 5 * time.Second}
}

// worldOrDefault is worldYAML, or testdata/world.yaml when it is empty.
func worldOrDefault(t *testing.T, worldYAML string) string {
	t.Helper()
	if worldYAML != "" {
		return worldYAML
	}
	data, err := os.ReadFile("testdata/world.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func orEmpty(rules string) string {
	if rules == "" {
		return " []"
	}
	return rules
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildSanity builds bin/zonepath-sanity once for the package's tests, each
// of which runs it how often (runs) says; -short skips them.
func buildSanity(t *testing.T, runs string) string {
	if testing.Short() {
		t.Skip("builds and runs zonepath-sanity " + runs)
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "zonepath-sanity-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "zonepath-sanity")
		// Without -race, whatever this test's build: the suite runs once per
		// case, 30 s for the package against 48 s with the race detector
		// (which the in-process drivers have), and its packages are the ones
		// make build compiles for bin/zonepath-sanity.
		out, err := exec.Command("go", "build", "-o", builtBin, "./cmd/zonepath-sanity").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building zonepath-sanity: %v", buildErr)
	}
	return builtBin
}

func baseConfig(t *testing.T) zpsanity.Config {
	cfg, err := zpsanity.LoadConfig("testdata/zonepath.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serveDriver runs the zonepath driver in-process with the given world,
// fault rules and changes, the way make sanity runs bin/zonepath; with
// a shape whose interceptor is not nil, the suite reaches it through a
// second server that calls the interceptor first.
func serveDriver(t *testing.T, dir, worldYAML, rules string, change func(*plugin.Config), shape shape) string {
	t.Helper()
	worldYAML = worldOrDefault(t, worldYAML)
	d := drivertest.Start(t, drivertest.Options{World: worldYAML, Faults: rules, Dir: dir, Config: func(c *plugin.Config) {
		c.NodeID, c.MaxVolumesPerNode = "sanity-node", 3
		if change != nil {
			change(c)
		}
	}})
	var intercept grpc.UnaryServerInterceptor
	if shape != nil {
		intercept = shape(t, d)
	}
	if intercept == nil {
		return d.Endpoint
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(intercept))
	csi.RegisterIdentityServer(srv, d.Plugin)
	csi.RegisterControllerServer(srv, d.Plugin)
	csi.RegisterGroupControllerServer(srv, d.Plugin)
	csi.RegisterNodeServer(srv, d.Plugin)
	return drivertest.Serve(t, srv)
}

// ignoreUnknownRequisite plays a driver that drops requisite segments it
// does not know (zonepath-sanity's made-up ones) and, left with none,
// creates the snapshot as if no requirement had been given: in its
// source's zone, elsewhere than asked.
func ignoreUnknownRequisite(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*csi.CreateSnapshotRequest); ok && r.GetAccessibilityRequirements() != nil {
		known := slices.DeleteFunc(slices.Clone(r.GetAccessibilityRequirements().GetRequisite()), func(s *csi.Topology) bool {
			return slices.Contains(slices.Collect(maps.Values(s.GetSegments())), "zonepath-sanity-no-such-place")
		})
		r = proto.Clone(r).(*csi.CreateSnapshotRequest)
		r.AccessibilityRequirements = nil
		if len(known) > 0 {
			r.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: known}
		}
		req = r
	}
	return handler(ctx, req)
}

// groupWithoutIDs plays a driver whose CreateVolumeGroupSnapshot members
// lack group_snapshot_id, which csi.proto requires to be the group's.
func groupWithoutIDs(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := resp.(*csi.CreateVolumeGroupSnapshotResponse); ok {
		r = proto.Clone(r).(*csi.CreateVolumeGroupSnapshotResponse)
		for _, m := range r.GetGroupSnapshot().GetSnapshots() {
			m.GroupSnapshotId = ""
		}
		resp = r
	}
	return resp, err
}

// listWithoutTopology plays a driver without GET_SNAPSHOT whose
// ListSnapshots entries carry no accessible_topology: the one read call it
// has must still agree with CreateSnapshot.
func listWithoutTopology(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if _, ok := req.(*csi.GetSnapshotRequest); ok {
		return nil, status.Error(codes.Unimplemented, "no GetSnapshot")
	}
	resp, err := handler(ctx, req)
	switch r := resp.(type) {
	case *csi.ControllerGetCapabilitiesResponse:
		resp = withoutCapabilities(r, csi.ControllerServiceCapability_RPC_GET_SNAPSHOT)
	case *csi.ListSnapshotsResponse:
		list := decoded(r).(*csi.ListSnapshotsResponse)
		for _, e := range list.GetEntries() {
			e.GetSnapshot().AccessibleTopology = nil
		}
		resp = list
	}
	return resp, err
}

// keepFirstUnpublish plays a driver whose first ControllerUnpublishVolume
// of an attach-limit test volume (zp-limit-*) answers OK and detaches
// nothing: the test's unpublish, the only one before cleanup, makes no
// room. Other tests' unpublishes (the health test publishes too) pass.
func keepFirstUnpublish() grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	limitVolumes, kept := map[string]bool{}, false
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csi.ControllerUnpublishVolumeRequest); ok {
			mu.Lock()
			keep := !kept && limitVolumes[r.GetVolumeId()]
			kept = kept || keep
			mu.Unlock()
			if keep {
				return &csi.ControllerUnpublishVolumeResponse{}, nil
			}
		}
		resp, err := handler(ctx, req)
		if r, ok := req.(*csi.CreateVolumeRequest); ok && err == nil && strings.HasPrefix(r.GetName(), "zp-limit-") {
			mu.Lock()
			limitVolumes[resp.(*csi.CreateVolumeResponse).GetVolume().GetVolumeId()] = true
			mu.Unlock()
		}
		return resp, err
	}
}

type result struct {
	failures, skipped []string
	output            string
}

func (r result) failedMatching() []string {
	var out []string
	for _, name := range []string{testCapability, testCapSnapshots, testRequisite, testElsewhere, testPreferred, testConsistent, testExhausted, testIdempotent,
		testOtherSource, testRequirements, testUnknown, testVolumeReuse, testVolumeUnknown, testRestoreIn, testRestoreOut, testUnconstrained, testAttachLimit, testKeys, testGroup,
		testHealthController, testHealthNode, testHealthList, testHealthEntries, testHealthConsistent, testHealthPaths, testStorageHealth, testModifyTwice,
		testMultiNode, testSingleNode, testPublishTopology} {
		for _, f := range r.failures {
			if strings.Contains(f, name) {
				out = append(out, name)
			}
		}
	}
	if len(out) != len(r.failures) {
		out = append(out, "(unknown test failed)")
	}
	sort.Strings(out)
	return out
}

func (r result) skippedMatching(name string) bool {
	for _, s := range r.skipped {
		if strings.Contains(s, name) {
			return true
		}
	}
	return false
}

type junit struct {
	Cases []struct {
		Name    string    `xml:"name,attr"`
		Failure *struct{} `xml:"failure"`
		Error   *struct{} `xml:"error"`
		Skipped *struct{} `xml:"skipped"`
	} `xml:"testsuite>testcase"`
}

// runSanity runs the extensions only, with extra flags, and reads the
// JUnit report.
func runSanity(t *testing.T, bin, endpoint, dir string, cfg zpsanity.Config, extra ...string) result {
	t.Helper()
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile, report := filepath.Join(dir, "zonepath.yaml"), filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(cfgFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	mutable, err := filepath.Abs("testdata/mutable-parameters.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The mutable parameters make sanity and make conformance pass: the
	// idempotency table's retry with new mutable parameters sends them.
	args := append([]string{"--csi.endpoint", endpoint, "--csi.mountdir", filepath.Join(dir, "mnt"), "--csi.stagingdir", filepath.Join(dir, "staging"),
		"--csi.testvolumemutableparameters", mutable,
		"--zonepath.config", cfgFile, "--zonepath.upstream=false", "--ginkgo.junit-report", report, "--ginkgo.no-color"}, extra...)
	cmd := exec.Command(bin, args...)
	out, runErr := cmd.CombinedOutput()
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no JUnit report (%v); zonepath-sanity said:\n%s", runErr, out)
	}
	var j junit
	if err := xml.Unmarshal(raw, &j); err != nil {
		t.Fatal(err)
	}
	r := result{output: string(out)}
	for _, c := range j.Cases {
		switch {
		case c.Failure != nil || c.Error != nil:
			r.failures = append(r.failures, c.Name)
		case c.Skipped != nil && strings.Contains(c.Name, "[zonepath]"):
			r.skipped = append(r.skipped, c.Name)
		}
	}
	if (runErr == nil) != (len(r.failures) == 0) {
		t.Fatalf("exit status %v disagrees with %d failures in the report:\n%s", runErr, len(r.failures), out)
	}
	return r
}

// groupDeleteIgnoresList plays a driver that deletes a group snapshot by
// its ID alone, whatever snapshot_ids the request names: the request
// reaches zonepath with the group's own members.
func groupDeleteIgnoresList() grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	members := map[string][]string{} // group ID: its members
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(*csi.DeleteVolumeGroupSnapshotRequest); ok {
			mu.Lock()
			ids, known := members[r.GetGroupSnapshotId()]
			mu.Unlock()
			if known {
				r = proto.Clone(r).(*csi.DeleteVolumeGroupSnapshotRequest)
				r.SnapshotIds = ids
				req = r
			}
		}
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csi.CreateVolumeGroupSnapshotResponse); ok && err == nil {
			g := r.GetGroupSnapshot()
			var ids []string
			for _, m := range g.GetSnapshots() {
				ids = append(ids, m.GetSnapshotId())
			}
			mu.Lock()
			members[g.GetGroupSnapshotId()] = ids // the same group again (idempotency) has the same members
			mu.Unlock()
		}
		return resp, err
	}
}
