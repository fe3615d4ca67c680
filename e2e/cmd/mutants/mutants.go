package main

import (
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/fakezones/spec"
)

// mutant is a broken set-up: a fake-zones cluster, built as for one of
// conformance's suite runs, that breaks one rule the suite checks.
type mutant struct {
	name string
	// breaks says which rule the set-up breaks, for the table.
	breaks string
	run    *suiteRun
	// faults, when set, are the zonepath controller's fault rules
	// (driver/faults): the driver breaks a CSI rule on purpose.
	faults string
	// upstream names zonepath components replaced by their upstream
	// originals: zonepath-cluster runs the upstream binary when ours is
	// absent from its bin directory.
	upstream []string
	// replaced names zonepath components run from another binary of the
	// bin directory: component → its path there, e.g. a test-only build
	// of zonepath-scheduler under bin/mutants/ (Makefile
	// SCHEDULER_MUTANTS).
	replaced map[string]string
	// cluster changes the run's cluster file.
	cluster func(*spec.File)
	// catchers are the scenarios that must fail: the mutant is caught
	// only when every one of them fails.
	catchers []string
}

// mutants are the set-ups make e2e-mutants runs, one at a time.
var mutants = []mutant{
	{
		name:   "drop-accessible-topology",
		breaks: "driver: CreateSnapshot returns no accessible_topology although it advertises SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (fault rule)",
		run:    &gateOnRun,
		faults: `rules:
- name: drop-accessible-topology
  match: {rpc: CreateSnapshot}
  action: {mutate: {clear: [snapshot.accessible_topology]}}
`,
		catchers: []string{"1", "2", "5"},
	},
	{
		name: "ignore-requisite",
		breaks: "driver: volumes and snapshots placed in one fixed segment whatever the requisite says " +
			"(fault rule setting accessible_topology to {region-2, zone-d})",
		run: &gateOnRun,
		faults: `rules:
- name: volume-outside-requisite
  match: {rpc: CreateVolume}
  action: {mutate: {set: {volume.accessible_topology: [{segments: {topology.kubernetes.io/region: region-2, topology.kubernetes.io/zone: zone-d}}]}}}
- name: snapshot-outside-requisite
  match: {rpc: CreateSnapshot}
  action: {mutate: {set: {snapshot.accessible_topology: [{segments: {topology.kubernetes.io/region: region-2, topology.kubernetes.io/zone: zone-d}}]}}}
`,
		catchers: []string{"1", "10", "16a", "16b"},
	},
	{
		name: "misspelt-zone-retried-forever",
		breaks: "driver: a requisite naming no zone of the driver is answered UNAVAILABLE, which the snapshotter retries " +
			"forever, so the VolumeSnapshot can never be deleted (fault rule)",
		run: &gateOnRun,
		faults: `rules:
- name: misspelt-zone-retried-forever
  match: {rpc: CreateSnapshot, segment: {topology.kubernetes.io/zone: zonepath-e2e-no-such-zone}}
  action: {code: Unavailable, message: "segment topology.kubernetes.io/zone=zonepath-e2e-no-such-zone: try again later"}
`,
		catchers: []string{"18"},
	},
	{
		name:     "never-resource-exhausted",
		breaks:   "driver: CreateSnapshot never returns RESOURCE_EXHAUSTED (cluster file without snapshotQuotas)",
		run:      &gateOnRun,
		cluster:  func(f *spec.File) { f.SnapshotQuotas = nil },
		catchers: []string{"11"},
	},
	{
		name:     "upstream-kube-scheduler",
		breaks:   "cluster: kube-scheduler without the SnapshotTopology plugin",
		run:      &gateOnRun,
		upstream: []string{"zonepath-scheduler"},
		catchers: []string{"3", "5", "6", "13"},
	},
	{
		name:     "upstream-csi-provisioner",
		breaks:   "cluster: upstream csi-provisioner, which ignores the snapshot's topology",
		run:      &gateOnRun,
		upstream: []string{"zonepath-provisioner"},
		catchers: []string{"4", "12"},
	},
	{
		name: "restore-outside-snapshot",
		breaks: "upstream csi-provisioner, which hands the driver StorageClass.allowedTopologies without the snapshot's " +
			"nodeAffinity, and a driver that does not narrow a restore to its snapshot's topology: a restore offered " +
			"zone-c is put there, though the snapshot is usable only in zone-a (fault rule on CreateVolume from a zps- " +
			"snapshot whose requisite names zone-c)",
		run:      &gateOnRun,
		upstream: []string{"zonepath-provisioner"},
		faults: `rules:
- name: restore-outside-snapshot
  match: {rpc: CreateVolume, name: "zps-*", segment: {topology.kubernetes.io/region: region-1, topology.kubernetes.io/zone: zone-c}}
  action: {mutate: {set: {volume.accessible_topology: [{segments: {topology.kubernetes.io/region: region-1, topology.kubernetes.io/zone: zone-c}}]}}}
`,
		catchers: []string{"4"},
	},
	{
		name:     "no-deletion-requeue",
		breaks:   "scheduler: SnapshotTopology never retries a pod after its snapshot or content is deleted (test-only build, tag zonepath_mutant_no_deletion_requeue)",
		run:      &gateOnRun,
		replaced: map[string]string{"zonepath-scheduler": "mutants/zonepath-scheduler-no-deletion-requeue"},
		catchers: []string{"7a", "7b"},
	},
	{
		name:     "reject-first-only",
		breaks:   "scheduler: SnapshotTopology filters a pod's first attempt only, so a retried pod is placed outside its snapshot's topology (test-only build, tag zonepath_mutant_reject_first_only)",
		run:      &gateOnRun,
		replaced: map[string]string{"zonepath-scheduler": "mutants/zonepath-scheduler-reject-first-only"},
		catchers: []string{"3", "10", "13"},
	},
	{
		name: "group-member-without-topology",
		breaks: "driver: GetSnapshot returns no accessible_topology, so the snapshotter has none to give a group snapshot " +
			"member's VolumeSnapshotContent, which the snapshot-controller made without nodeAffinity (fault rule)",
		run: &gateOnRun,
		faults: `rules:
- name: group-member-without-topology
  match: {rpc: GetSnapshot}
  action: {mutate: {clear: [snapshot.accessible_topology]}}
`,
		catchers: []string{"19"},
	},
	{
		name: "rwx-one-node",
		breaks: "driver: a ReadWriteMany volume is published to one node at a time, as a single-node driver would: every " +
			"ControllerPublishVolume after the cluster's first is FAILED_PRECONDITION (\"Volume published to another node\"; fault rule)",
		run: &gateOnRun,
		faults: `rules:
- name: rwx-one-node
  match: {rpc: ControllerPublishVolume, nth: 2}
  action: {code: FailedPrecondition, message: "volume published to another node"}
`,
		catchers: []string{"24"},
	},
	{
		name: "publish-beyond-reported-topology",
		breaks: "driver: volumes live in two zones of their region (volumes.replicas: 2) and are published in both, but " +
			"CreateVolume reports only zone-a for a volume asked for there, so a node of its second zone, outside the " +
			"PersistentVolume's nodeAffinity, gets it published (cluster file and fault rule)",
		run:     &gateOnRun,
		cluster: func(f *spec.File) { f.Driver.Topology.Volumes.Replicas = ptr.To(2) },
		faults: `rules:
- name: publish-beyond-reported-topology
  match: {rpc: CreateVolume, segment: {topology.kubernetes.io/region: region-1, topology.kubernetes.io/zone: zone-a}}
  action: {mutate: {set: {volume.accessible_topology: [{segments: {topology.kubernetes.io/region: region-1, topology.kubernetes.io/zone: zone-a}}]}}}
`,
		catchers: []string{"24"},
	},
	{
		name: "capacity-everywhere",
		breaks: "driver: GetCapacity reports the same room, 1 PiB and no maximum_volume_size, for every zone, " +
			"including the zones of 50Gi, so the CSIStorageCapacity objects no longer say where a volume fits (fault rule)",
		run: &gateOnRun,
		faults: `rules:
- name: capacity-everywhere
  match: {rpc: GetCapacity}
  action: {mutate: {clear: [maximum_volume_size], set: {available_capacity: 1125899906842624}}}
`,
		catchers: []string{"22a"},
	},
	{
		name: "scheduler-ignores-capacity",
		breaks: "cluster: CSIDrivers without storageCapacity: true (cluster file storageCapacity: false), so the scheduler " +
			"places WaitForFirstConsumer claims without reading the CSIStorageCapacity objects the provisioner publishes",
		run:      &gateOnRun,
		cluster:  func(f *spec.File) { f.StorageCapacity = ptr.To(false) },
		catchers: []string{"22b"},
	},
	{
		name:     "csinode-without-allocatable",
		breaks:   "driver: NodeGetInfo reports no max_volumes_per_node, so CSINode has no allocatable.count (cluster file maxVolumesPerNode: 0)",
		run:      &cluster2Run,
		cluster:  func(f *spec.File) { f.MaxVolumesPerNode = 0 },
		catchers: []string{"15a", "15b"},
	},
	{
		name: "csinode-limit-of-another-node",
		breaks: "driver: node-a-1 reports max_volumes_per_node 2, not the 4 the extension file says every node but its nodeLimits " +
			"reports, so one CSINode's allocatable.count is not the driver's declared limit (cluster file nodes[].maxVolumesPerNode)",
		run: &cluster2Run,
		cluster: func(f *spec.File) {
			f.Nodes = append(f.Nodes, spec.NodeOverride{Name: "node-a-1", MaxVolumesPerNode: ptr.To[int64](2)})
		},
		catchers: []string{"15a"},
	},
	{
		name: "outage-restore-nowhere",
		breaks: "driver: while zone-c is down, the other zone of its region refuses new volumes too, so a region-wide " +
			"snapshot cannot be restored anywhere (fault rule: CreateVolume in zone-a RESOURCE_EXHAUSTED)",
		run: &gateOnRun,
		faults: `rules:
- name: outage-restore-nowhere
  match: {rpc: CreateVolume, segment: {topology.kubernetes.io/zone: zone-a}}
  action: {code: ResourceExhausted, message: "zone-a is full"}
`,
		catchers: []string{"20"},
	},
}
