package driverext

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/internal/yamlfile"
)

// File is the extension file.
type File struct {
	// SnapshotTopology says the driver advertises
	// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS: CreateSnapshot honours
	// accessibility_requirements and returns accessible_topology.
	SnapshotTopology bool `json:"snapshotTopology"`
	// FeatureGates is the state of the gates in the cluster under test.
	FeatureGates FeatureGates `json:"featureGates"`
	// VolumeTopology false says the driver lacks
	// VOLUME_ACCESSIBILITY_CONSTRAINTS (NFS, iSCSI, SMB): its volumes
	// carry no accessible_topology and are usable from every node. Then
	// segments must be empty, and every spec that places volumes in
	// segments skips naming it; the rest (KEP-5030's) run. Default true.
	VolumeTopology *bool `json:"volumeTopology,omitempty"`
	// NodeLocal says every segment of the driver is one node (a
	// hostname-like key: csi-driver-host-path, TopoLVM, OpenEBS
	// LocalPV): there is no region and no zone of several nodes, and a
	// volume is usable on its node only. Specs that need a wider segment
	// or a node without the driver skip naming it.
	NodeLocal bool `json:"nodeLocal,omitempty"`
	// RestoresInSourceSegmentOnly says the driver restores a snapshot
	// only in its source volume's segment (a node-local driver's local
	// copy) and refuses a restore elsewhere with RESOURCE_EXHAUSTED or
	// INVALID_ARGUMENT. Scenario 8 (a driver without snapshot topology)
	// then expects that refusal elsewhere and a restore in the source's
	// segment, instead of a restore anywhere.
	RestoresInSourceSegmentOnly bool `json:"restoresInSourceSegmentOnly,omitempty"`
	// Segments are the topology segments the specs place volumes and
	// snapshots in, each a map of topology key to value, best first.
	// Every key one of DriverInfo.TopologyKeys; each segment must have
	// schedulable nodes with exactly these labels. Most specs need two;
	// with fewer (a one-zone cluster) they skip, saying so. None without
	// volume topology.
	Segments []Segment `json:"segments"`
	// RegionKey is the topology key of a region, a segment wider than one
	// of Segments; the multi-region spec needs it and two segments that
	// differ in it. Optional.
	RegionKey string `json:"regionKey,omitempty"`
	// RegionWideSnapshotClassParameters are VolumeSnapshotClass
	// parameters that make a snapshot usable from every segment of its
	// region (zonepath: zonepath.csi.dev/snapshotScope: region). Optional:
	// specs that restore a snapshot outside its source's segment skip
	// without them.
	RegionWideSnapshotClassParameters map[string]string `json:"regionWideSnapshotClassParameters,omitempty"`
	// AttachLimits describes the driver's attach limit and the nodes the
	// KEP-5030 specs use. Optional: without it they skip.
	AttachLimits *AttachLimits `json:"attachLimits,omitempty"`
	// UnrestrictedSnapshotClassParameters are VolumeSnapshotClass
	// parameters that make the driver return an empty
	// accessible_topology, a snapshot usable from everywhere (zonepath:
	// zonepath.csi.dev/snapshotScope: global). Optional: the spec about
	// such snapshots skips without them.
	UnrestrictedSnapshotClassParameters map[string]string `json:"unrestrictedSnapshotClassParameters,omitempty"`
	// RestrictedSnapshotClassParameters are VolumeSnapshotClass
	// parameters that make the driver restrict a snapshot to where it is
	// cut (zonepath: zonepath.csi.dev/snapshotScope: zone). The specs whose
	// snapshots must have a nodeAffinity use them. Optional: for a driver
	// whose snapshots are restricted by default. One whose default is an
	// empty accessible_topology (which CSI allows, so the suite cannot tell
	// it from a driver that drops the field) needs them.
	RestrictedSnapshotClassParameters map[string]string `json:"restrictedSnapshotClassParameters,omitempty"`
	// SnapshotsInSourceSegmentOnly says the driver can cut a snapshot
	// only in its source volume's segment and answers RESOURCE_EXHAUSTED
	// for a requisite without it (CSI CreateSnapshot Errors: "Not enough
	// resources to create snapshot"). Scenario 10 then expects that
	// refusal instead of a snapshot usable from another segment.
	SnapshotsInSourceSegmentOnly bool `json:"snapshotsInSourceSegmentOnly,omitempty"`
	// StorageCapacity says the driver publishes CSIStorageCapacity
	// objects (CSIDriver storageCapacity: true, external-provisioner
	// --enable-capacity) and the cluster's segments differ in room, so
	// that a size fits some and not others. The storage-capacity spec
	// reads the sizes from the objects; it fails when they do not differ,
	// and skips without this key.
	StorageCapacity bool `json:"storageCapacity,omitempty"`
	// Exhaustion says how to make CreateSnapshot fail with
	// RESOURCE_EXHAUSTED in one segment and how to give it room again,
	// with zonepath-sanity's keys. Optional: the spec skips without it.
	Exhaustion *Exhaustion `json:"exhaustion,omitempty"`
	// ZoneOutage is a zone the zone outage spec takes down and brings
	// back (zoneoutage.go). Optional: the spec skips without it.
	ZoneOutage *ZoneOutage `json:"zoneOutage,omitempty"`
}

// Exhaustion is a segment that runs out of room for snapshots. Its
// segment must be one no other spec snapshots in, so that the spec's
// count of snapshots is the segment's.
type Exhaustion struct {
	// ExhaustedSegment is a valid segment where the driver runs out of
	// room for snapshots; keys among DriverInfo.TopologyKeys.
	ExhaustedSegment Segment `json:"exhaustedSegment"`
	// ExhaustAfter is how many snapshots fill ExhaustedSegment. The spec
	// makes that many, expects the next to fail with RESOURCE_EXHAUSTED
	// and lifts the condition by deleting one of them. 0: the segment is
	// exhausted from the start and LiftCommand lifts it.
	ExhaustAfter int `json:"exhaustAfter,omitempty"`
	// LiftCommand is run with sh -c and KUBECONFIG set to the suite's
	// kubeconfig to lift a segment exhausted from the start (ExhaustAfter
	// 0), for example by raising a quota.
	LiftCommand string `json:"liftCommand,omitempty"`
	// LiftTimeout bounds the wait for the snapshot to become ready after
	// the lift; default the driver file's Timeouts.SnapshotCreate.
	LiftTimeout metav1.Duration `json:"liftTimeout,omitempty"`
}

// FeatureGates are the Kubernetes feature gates the specs depend on.
type FeatureGates struct {
	// VolumeSnapshotTopology (KEP-5943) in the snapshotter sidecar, the
	// provisioner and the scheduler.
	VolumeSnapshotTopology bool `json:"VolumeSnapshotTopology"`
}

// Segment is one topology segment: topology key → value.
type Segment map[string]string

// String is the segment as key=value pairs, keys sorted.
func (s Segment) String() string {
	parts := make([]string, 0, len(s))
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, k+"="+s[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// check says whether every key of s is a topology key of the driver
// with a value.
func (s Segment) check(topologyKeys []string) error {
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if !slices.Contains(topologyKeys, k) {
			return fmt.Errorf("key %q is not one of DriverInfo.TopologyKeys %v", k, topologyKeys)
		}
		if s[k] == "" {
			return fmt.Errorf("key %q has an empty value", k)
		}
	}
	return nil
}

// Load reads and strictly parses an extension file. It does not validate
// against the driver: see Validate.
func Load(path string) (*File, error) {
	return yamlfile.Load("driver ext", path, Parse)
}

// Parse strictly parses an extension file's content: unknown keys and
// duplicate keys are errors that name them.
func Parse(data []byte) (*File, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		// sigs.k8s.io/yaml goes through encoding/json; its prefixes say
		// nothing to the reader of a YAML file.
		msg := err.Error()
		for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: ", "json: "} {
			msg = strings.TrimPrefix(msg, p)
		}
		return nil, fmt.Errorf("%s (known keys: snapshotTopology, volumeTopology, nodeLocal, restoresInSourceSegmentOnly, featureGates.VolumeSnapshotTopology, segments, regionKey, regionWideSnapshotClassParameters, unrestrictedSnapshotClassParameters, restrictedSnapshotClassParameters, storageCapacity, exhaustion.{exhaustedSegment, exhaustAfter, liftCommand, liftTimeout}, attachLimits.{%s}, %s)", msg, strings.Join(attachLimitsKeys, ", "), zoneOutageKeys)
	}
	return &f, nil
}

// Validate checks the file against the driver's topology keys
// (DriverInfo.TopologyKeys of the upstream driver file).
func (f *File) Validate(topologyKeys []string) error {
	if !f.HasVolumeTopology() {
		return f.validateNoTopology()
	}
	if len(f.Segments) == 0 {
		return fmt.Errorf("segments: none given; list the segments with schedulable nodes the specs place volumes in, or set volumeTopology: false for a driver without VOLUME_ACCESSIBILITY_CONSTRAINTS")
	}
	if len(topologyKeys) == 0 {
		return fmt.Errorf("segments: the driver file's DriverInfo.TopologyKeys is empty, so no segment key can be checked; list the driver's topology keys there")
	}
	seen := map[string]int{}
	for i, s := range f.Segments {
		if len(s) == 0 {
			return fmt.Errorf("segments[%d]: empty segment", i)
		}
		if err := s.check(topologyKeys); err != nil {
			return fmt.Errorf("segments[%d]: %w", i, err)
		}
		if j, ok := seen[s.String()]; ok {
			return fmt.Errorf("segments[%d]: %s repeats segments[%d]", i, s, j)
		}
		seen[s.String()] = i
	}
	if f.RegionKey != "" {
		if !slices.Contains(topologyKeys, f.RegionKey) {
			return fmt.Errorf("regionKey: %q is not one of DriverInfo.TopologyKeys %v", f.RegionKey, topologyKeys)
		}
		for i, s := range f.Segments {
			if _, ok := s[f.RegionKey]; !ok {
				return fmt.Errorf("segments[%d]: %s has no value for regionKey %q", i, s, f.RegionKey)
			}
		}
	}
	for name, params := range map[string]map[string]string{
		"regionWideSnapshotClassParameters":   f.RegionWideSnapshotClassParameters,
		"unrestrictedSnapshotClassParameters": f.UnrestrictedSnapshotClassParameters,
		"restrictedSnapshotClassParameters":   f.RestrictedSnapshotClassParameters,
	} {
		if _, ok := params[""]; ok {
			return fmt.Errorf("%s: empty key", name)
		}
	}
	if f.AttachLimits != nil {
		if err := f.AttachLimits.validate(); err != nil {
			return err
		}
	}
	if err := f.validateZoneOutage(topologyKeys); err != nil {
		return err
	}
	if f.Exhaustion != nil {
		return f.Exhaustion.validate(topologyKeys)
	}
	return nil
}

// validate checks the exhaustion section as zonepath-sanity checks its
// keys, and that the spec has a way to lift the condition: it proves the
// snapshot becomes ready once the segment has room.
func (x *Exhaustion) validate(topologyKeys []string) error {
	if len(x.ExhaustedSegment) == 0 {
		return fmt.Errorf("exhaustion.exhaustedSegment: missing; the section needs the segment to exhaust")
	}
	if err := x.ExhaustedSegment.check(topologyKeys); err != nil {
		return fmt.Errorf("exhaustion.exhaustedSegment: %w", err)
	}
	switch {
	case x.ExhaustAfter < 0 || x.ExhaustAfter > 1000:
		return fmt.Errorf("exhaustion.exhaustAfter: must be from 0 to 1000, got %d", x.ExhaustAfter)
	case x.ExhaustAfter > 0 && x.LiftCommand != "":
		return fmt.Errorf("exhaustion.liftCommand: is for a segment exhausted from the start; with exhaustAfter the spec lifts by deleting a snapshot")
	case x.ExhaustAfter == 0 && x.LiftCommand == "":
		return fmt.Errorf("exhaustion: neither exhaustAfter nor liftCommand is set, so the spec cannot give the segment room again")
	case x.LiftTimeout.Duration < 0:
		return fmt.Errorf("exhaustion.liftTimeout: must not be negative, got %v", x.LiftTimeout.Duration)
	}
	return nil
}

// SnapshotTopologyMissing is why a spec that needs snapshot topology end
// to end cannot run, or "" when it can.
func (f *File) SnapshotTopologyMissing() string {
	switch {
	case !f.SnapshotTopology:
		return "driver ext: snapshotTopology is false (the driver lacks SNAPSHOT_ACCESSIBILITY_CONSTRAINTS)"
	case !f.FeatureGates.VolumeSnapshotTopology:
		return "driver ext: featureGates.VolumeSnapshotTopology is false in this cluster"
	}
	return ""
}

// GateOffMissing is why a spec about a cluster whose components run with
// the VolumeSnapshotTopology gate off cannot run, or "". It needs the
// driver's capability too: a driver that returns no accessible_topology
// would leave nodeAffinity unwritten with the gate on as well.
func (f *File) GateOffMissing() string {
	switch {
	case f.FeatureGates.VolumeSnapshotTopology:
		return "driver ext: featureGates.VolumeSnapshotTopology is true in this cluster; the gate-off specs need a cluster whose components run with it false"
	case !f.SnapshotTopology:
		return "driver ext: snapshotTopology is false (the driver lacks SNAPSHOT_ACCESSIBILITY_CONSTRAINTS), so an unwritten nodeAffinity would prove nothing about the gate"
	}
	return ""
}

// RegionWideMissing is why a spec that needs region-wide snapshots cannot
// run, or "".
func (f *File) RegionWideMissing() string {
	if why := f.noTopologyMissing(); why != "" {
		return why
	}
	if len(f.RegionWideSnapshotClassParameters) == 0 && f.NodeLocal {
		return nodeLocalWhy + "a snapshot of a node-local driver is usable from its node, never from a region"
	}
	if len(f.RegionWideSnapshotClassParameters) == 0 {
		return "driver ext: regionWideSnapshotClassParameters is not set, so no snapshot usable outside its source's segment can be made"
	}
	return ""
}

// UnrestrictedMissing is why a spec that needs snapshots with an empty
// accessible_topology cannot run, or "".
func (f *File) UnrestrictedMissing() string {
	if why := f.noTopologyMissing(); why != "" {
		return why
	}
	if len(f.UnrestrictedSnapshotClassParameters) == 0 {
		return "driver ext: unrestrictedSnapshotClassParameters is not set, so no snapshot with an empty accessible_topology can be made"
	}
	return ""
}

// ExhaustionMissing is why the RESOURCE_EXHAUSTED spec cannot run, or "".
func (f *File) ExhaustionMissing() string {
	if why := f.noTopologyMissing(); why != "" {
		return why
	}
	if f.Exhaustion == nil {
		return "driver ext: exhaustion is not set, so no segment can be made to run out of room for snapshots"
	}
	return ""
}

// OtherRegion returns the first segment whose RegionKey value differs from
// segments[0]'s, or why there is none.
func (f *File) OtherRegion() (Segment, string) {
	if why := f.noTopologyMissing(); why != "" {
		return nil, why
	}
	if f.RegionKey == "" && f.NodeLocal {
		return nil, nodeLocalWhy + "its segments are single nodes, with no region key"
	}
	if f.RegionKey == "" {
		return nil, "driver ext: regionKey is not set"
	}
	first := f.Segments[0][f.RegionKey]
	for _, s := range f.Segments[1:] {
		if s[f.RegionKey] != first {
			return s, ""
		}
	}
	return nil, fmt.Sprintf("driver ext: every segment has %s=%s; a second region needs a segment in another region", f.RegionKey, first)
}

// SameRegion returns the first segment after segments[0] in the same
// region (or any second segment when RegionKey is unset): the pair a
// region-wide snapshot of a segments[0] volume covers.
func (f *File) SameRegion() Segment {
	if len(f.Segments) < 2 {
		return nil
	}
	for _, s := range f.Segments[1:] {
		if f.RegionKey == "" || s[f.RegionKey] == f.Segments[0][f.RegionKey] {
			return s
		}
	}
	return nil
}
