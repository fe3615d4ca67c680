package main

import (
	"regexp"
	"slices"
)

// The suites a skip comes from.
const (
	sanitySuite = "sanity"
	e2eSuite    = "e2e"
)

// capabilities is the matrix's vocabulary: what a driver, its cluster or
// its files may lack that a spec needs. A personality's lacks: names
// entries of it; e2e/README.md ("Conformance matrix") lists them.
var capabilities = map[string]string{
	// KEP-5943 and the suites' extension files.
	"snapshot-topology":     "the driver does not advertise SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (CSI spec <= 1.12)",
	"capability-off":        "the driver has SNAPSHOT_ACCESSIBILITY_CONSTRAINTS, so the spec for a driver without it (scenario 8) has nothing to test",
	"gate-on":               "the cluster's components run with VolumeSnapshotTopology off",
	"gate-off":              "the cluster's components run with VolumeSnapshotTopology on, so the gate-off specs have nothing to test",
	"region-wide-snapshots": "no VolumeSnapshotClass parameters make a snapshot usable from its whole region (regionWideSnapshotClassParameters)",
	"global-snapshots":      "no VolumeSnapshotClass parameters make a snapshot without accessible_topology (unrestrictedSnapshotClassParameters)",
	"restore-outside":       "no configured segment lies outside a snapshot's accessible_topology (global snapshots, or regional ones with every segment in one region), so no restore can be refused for being outside it",
	"exhaustion":            "no segment can be made to run out of room for snapshots (RESOURCE_EXHAUSTED)",
	"storage-capacity":      "the driver publishes no CSIStorageCapacity objects, or the cluster's segments do not differ in room (extension file storageCapacity)",
	"region-key":            "the driver reports no region key",
	"multi-region":          "every segment is in one region",
	"second-zone-in-region": "no second segment in the first segment's region",
	"two-segments":          "fewer than two disjoint segments the driver can satisfy",
	// A regional or replicated volume is accessible from more than its
	// requisite: zonepath-sanity needs a configured segment it is not.
	"segment-outside-source": "every configured segment meets a place a source volume is accessible from (regional or replicated volumes), so no snapshot requisite can leave the source's segment out",
	"volume-topology":        "the driver reports no accessible_topology for volumes or nodes (no VOLUME_ACCESSIBILITY_CONSTRAINTS: NFS, iSCSI, SMB)",
	"node-local":             "every segment is one node (csi-driver-host-path, TopoLVM, OpenEBS LocalPV): no region, no segment of several nodes, no volume for a node without the driver",
	"nodes-elsewhere":        "every schedulable node is inside the segment a spec restricts to",
	"topology-labels":        "a node lacks a label of DriverInfo.TopologyKeys",
	"hostname-label":         "a node lacks kubernetes.io/hostname",
	"zone-outage":            "no way to take a zone down and back up is configured (zonepath-sanity's outageCommand, the extension file's zoneOutage)",
	// Attach limits (KEP-5030).
	"attach-limit":            "the driver reports no max_volumes_per_node, or the extension file no attachLimits",
	"kep-5030-server":         "the API server predates KEP-5030's preventPodSchedulingIfMissing",
	"csi-sanity-attach-limit": "nodes have volumes attached from the start (a root disk), so upstream csi-sanity's attach-limit test, which assumes none, is left off (no --csi.testnodevolumeattachlimit in sanityFlags)",
	"controller-publish":      "the controller does not publish (no PUBLISH_UNPUBLISH_VOLUME)",
	"publish-readonly":        "ControllerPublishVolume's readonly field is not supported",
	// Shared access (zonepath-sanity's nodes; issue 33).
	"second-node":  "no node besides the one under test lies in a volume's accessible_topology (every segment is one node, or zonepath-sanity's nodes name none), so no second node can share it",
	"node-outside": "no node lies outside a volume's accessible_topology (zonepath-sanity's nodes name none), so no publish can be refused for being outside it",
	"multi-node":   "the driver creates no volume of a MULTI_NODE_* access mode (ReadWriteMany, ReadOnlyMany)",
	// Upstream csi-sanity's optional CSI capabilities.
	"snapshots":      "the driver cuts no snapshots (no CREATE_DELETE_SNAPSHOT)",
	"list-snapshots": "no LIST_SNAPSHOTS or GET_SNAPSHOT: a snapshot cannot be read back",
	"modify-volume":  "no MODIFY_VOLUME (ControllerModifyVolume, VolumeAttributesClass)",
	// The matrix passes sanity/testdata/mutable-parameters.yaml (--mutable-parameters).
	"mutable-parameters": "no mutable parameters the driver accepts are given to zonepath-sanity (--csi.testvolumemutableparameters)",
	"volume-health":      "no GET_VOLUME, LIST_VOLUMES_PUBLISHED_NODES, VOLUME_CONDITION or NodeGetVolumeHealth",
	"storage-health":     "no NodeGetStorageHealth",
	"group-snapshots":    "no GroupController service (VolumeGroupSnapshots)",
	"expansion":          "no EXPAND_VOLUME (controller or node)",
	"cloning":            "no CLONE_VOLUME",
	"node-stage":         "no STAGE_UNSTAGE_VOLUME",
	"volume-stats":       "no GET_VOLUME_STATS",
	"get-capacity":       "no GET_CAPACITY",
	"list-volumes":       "no LIST_VOLUMES",
	"capacity-range":     "the driver ignores or does not report volume capacity",
	"multi-writer":       "no SINGLE_NODE_MULTI_WRITER",
	// The set-up.
	"split-plugins": "the node plugin's socket serves no Controller service (controller and node plugins run apart, as in Kubernetes), so upstream's single-plugin Node Service specs skip, and so do its GroupController specs, which look for GROUP_CONTROLLER_SERVICE on the node socket (--csi.endpoint)",
}

// driverLacks are what every personality lacks: each is the one zonepath
// binary, deployed as Kubernetes runs it, and no personality's files
// configure a zone outage. They explain skips of every row besides the
// personality's own lacks:. zonepath has MODIFY_VOLUME,
// GROUP_CONTROLLER_SERVICE and the volume health RPCs, so their skips are
// no longer among them.
var driverLacks = []string{"split-plugins", "zone-outage"}

// skipRule maps skip reasons of one suite, matched whole, to a capability.
type skipRule struct {
	suite      string
	reason     *regexp.Regexp
	capability string
}

func rule(suite, capability, reason string) skipRule {
	return skipRule{suite: suite, capability: capability, reason: regexp.MustCompile(`^(?:` + reason + `)$`)}
}

// skipRules are the Skip texts of e2e/*.go (most from e2e/driverext),
// sanity/*.go and upstream csi-sanity v5.6.0 (pkg/sanity), and what each
// says is missing. A text not here is explained by nothing.
var skipRules = []skipRule{
	// e2e: e2e/driverext's reasons, then the specs' own.
	rule(e2eSuite, "snapshot-topology", `driver ext: snapshotTopology is false \(the driver lacks SNAPSHOT_ACCESSIBILITY_CONSTRAINTS\).*`),
	rule(e2eSuite, "capability-off", `driver ext: snapshotTopology is true; scenario 8 is for a driver without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS.*`),
	rule(e2eSuite, "gate-on", `driver ext: featureGates\.VolumeSnapshotTopology is false in this cluster`),
	rule(e2eSuite, "gate-off", `driver ext: featureGates\.VolumeSnapshotTopology is true in this cluster; the gate-off specs need .*`),
	rule(e2eSuite, "volume-topology", `driver ext: volumeTopology is false \(the driver lacks VOLUME_ACCESSIBILITY_CONSTRAINTS\).*`),
	rule(e2eSuite, "two-segments", `driver ext: segments lists \d+ segment\(s\); the spec needs \d+`),
	rule(e2eSuite, "node-local", `driver ext: nodeLocal is true: .*`),
	rule(e2eSuite, "region-wide-snapshots", `driver ext: regionWideSnapshotClassParameters is not set.*`),
	rule(e2eSuite, "global-snapshots", `driver ext: unrestrictedSnapshotClassParameters is not set.*`),
	rule(e2eSuite, "exhaustion", `driver ext: exhaustion is not set.*`),
	rule(e2eSuite, "storage-capacity", `driver ext: storageCapacity is not set.*`),
	rule(e2eSuite, "region-key", `driver ext: regionKey is not set`),
	rule(e2eSuite, "multi-region", `driver ext: every segment has \S+; a second region needs a segment in another region`),
	rule(e2eSuite, "second-zone-in-region", `driver ext: no segment after segments\[0\] is in its region .*`),
	rule(e2eSuite, "attach-limit", `driver ext: attachLimits(\.\w+)? is not set.*`),
	rule(e2eSuite, "kep-5030-server", `server \S+ is older than \S+, where CSIDriver\.spec\.preventPodSchedulingIfMissing .*`),
	rule(e2eSuite, "hostname-label", `node \S+ has no kubernetes\.io/hostname label to pin a pod to it`),
	rule(e2eSuite, "topology-labels", `node \S+ has no label \S+ \(one of DriverInfo\.TopologyKeys\).*`),
	rule(e2eSuite, "nodes-elsewhere", `every schedulable node is inside .*: where a pod lands proves nothing`),
	rule(e2eSuite, "group-snapshots", `driver file: DriverInfo\.Capabilities\.groupSnapshot is not true.*`),
	rule(e2eSuite, "zone-outage", `driver ext: zoneOutage is not set.*`),
	rule(e2eSuite, "controller-publish", `CSIDriver \S+ has attachRequired: false: no ControllerPublishVolume to judge`),
	rule(e2eSuite, "multi-node", `driver file: DriverInfo\.Capabilities\.RWX is not true.*`),
	rule(e2eSuite, "second-node", `needs two nodes whose CSINode lists the driver inside the volume's nodeAffinity .*`),
	rule(e2eSuite, "restore-outside", `every segment of the extension file has a node in snapshot \S+'s nodeAffinity .*: list a segment outside it.*`),
	// sanity: zonepath's extensions.
	rule(sanitySuite, "snapshot-topology", `SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not advertised.*`),
	rule(sanitySuite, "snapshots", `CREATE_DELETE_SNAPSHOT not supported.*`),
	rule(sanitySuite, "group-snapshots", `GROUP_CONTROLLER_SERVICE not advertised.*`),
	rule(sanitySuite, "volume-topology", `VOLUME_ACCESSIBILITY_CONSTRAINTS not advertised.*|the node reports no accessible_topology`),
	rule(sanitySuite, "two-segments", `needs \d+ segments the driver can satisfy, \d+ known.*`),
	rule(sanitySuite, "exhaustion", `no exhausted segment configured.*`),
	rule(sanitySuite, "segment-outside-source", `the source volume is accessible from .*, which meets every configured segment: none excludes it.*`),
	rule(sanitySuite, "restore-outside", `the snapshot is usable from .* too; configure disjoint segments|`+
		`the snapshot has no accessible_topology, so it is usable from everywhere \(a global snapshot\): no restore lies outside it|`+
		`the snapshot is usable from .*, which covers every configured segment: configure one outside it.*`),
	rule(sanitySuite, "list-snapshots", `the driver advertises neither LIST_SNAPSHOTS nor GET_SNAPSHOT.*`),
	rule(sanitySuite, "zone-outage", `no outageCommand and recoverCommand configured.*`),
	rule(sanitySuite, "storage-health", `node GET_STORAGE_HEALTH not supported`),
	rule(sanitySuite, "modify-volume", `MODIFY_VOLUME not supported`),
	rule(sanitySuite, "mutable-parameters", `no mutable parameters configured \(--csi\.testvolumemutableparameters\).*`),
	rule(sanitySuite, "volume-health", `(node )?(GET_VOLUME_HEALTH|LIST_VOLUME_HEALTH) not supported`),
	rule(sanitySuite, "controller-publish", `PUBLISH_UNPUBLISH_VOLUME not supported.*`),
	rule(sanitySuite, "second-node", `no configured node \(nodes in --zonepath\.config\) lies inside the volume's accessible_topology .*`),
	rule(sanitySuite, "node-outside", `no configured node \(nodes in --zonepath\.config\) lies outside the volume's accessible_topology .*`),
	rule(sanitySuite, "multi-node", `the driver creates no volume of a MULTI_NODE_\* access mode it can be tested with`),
	rule(sanitySuite, "attach-limit", `the node reports no max_volumes_per_node|max_volumes_per_node \d+ is above the ceiling of \d+ the test fills .*|`+
		`the node took no publish \(.*\): all of max_volumes_per_node \d+ is taken before the test, .*`),
	// sanity: upstream csi-sanity's.
	rule(sanitySuite, "snapshot-topology", `SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not supported`),
	rule(sanitySuite, "volume-topology", `node does not report accessible topology`),
	rule(sanitySuite, "snapshots", `(Snapshot|DeleteSnapshot|CreateSnapshot) not supported`),
	rule(sanitySuite, "list-snapshots", `(ListSnapshots|GetSnapshot) not supported`),
	rule(sanitySuite, "attach-limit", `No MaxVolumesPerNode`),
	rule(sanitySuite, "csi-sanity-attach-limit", `testnodevolumeattachlimit not enabled`),
	rule(sanitySuite, "controller-publish", `ControllerPublishVolume not supported|Controller Publish, UnpublishVolume not supported|ControllerUnpublishVolume not supported`),
	rule(sanitySuite, "publish-readonly", `ControllerPublishVolume\.readonly field not supported`),
	rule(sanitySuite, "modify-volume", `ControllerModifyVolume not supported|Modify [vV]olume not supported`),
	rule(sanitySuite, "volume-health", `(ControllerGetVolumeHealth|ControllerListVolumeHealth|NodeGetVolumeHealth) not supported`),
	rule(sanitySuite, "storage-health", `NodeGetStorageHealth not supported`),
	rule(sanitySuite, "group-snapshots", `VolumeGroupSnapshots not supported`),
	rule(sanitySuite, "expansion", `(ControllerExpandVolume|NodeExpandVolume) not supported`),
	rule(sanitySuite, "cloning", `Volume Cloning not supported`),
	rule(sanitySuite, "node-stage", `(NodeStageVolume|NodeUnstageVolume) not supported`),
	rule(sanitySuite, "volume-stats", `NodeGetVolume not supported`),
	rule(sanitySuite, "get-capacity", `GetCapacity not supported`),
	rule(sanitySuite, "list-volumes", `ListVolumes not supported`),
	rule(sanitySuite, "capacity-range", `Required bytes not supported|capacity of the volume is unknown`),
	rule(sanitySuite, "multi-writer", `Service does not have single node multi writer capability`),
	// csi-sanity v5.6.0 asks the node socket (sc.Conn) whether the plugin
	// has GROUP_CONTROLLER_SERVICE, and a node plugin running apart from
	// its controller does not serve it: the matrix always runs them apart.
	rule(sanitySuite, "split-plugins", `Controller Service not provided: CreateVolume not supported|GroupControllerService not supported`),
}

// classify names the capability whose absence a skip reason of a suite
// gives, or "" when no rule knows the reason.
func classify(suite, reason string) string {
	for _, r := range skipRules {
		if r.suite == suite && r.reason.MatchString(reason) {
			return r.capability
		}
	}
	return ""
}

func capabilityNames() []string {
	names := make([]string, 0, len(capabilities))
	for c := range capabilities {
		names = append(names, c)
	}
	slices.Sort(names)
	return names
}
