// Package driverext reads the zonepath e2e suite's driver extension file:
// what a driver and its cluster can do that the upstream external-storage
// driver file (-storage.testdriver) cannot say. It is parsed strictly: an
// unknown or misspelt key is an error naming the key, where upstream's
// loader would silently ignore it and skip the specs it guards.
package driverext

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// File is the extension file.
type File struct {
	// SnapshotTopology says the driver advertises
	// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS: CreateSnapshot honours
	// accessibility_requirements and returns accessible_topology.
	SnapshotTopology bool `json:"snapshotTopology"`
	// FeatureGates is the state of the gates in the cluster under test.
	FeatureGates FeatureGates `json:"featureGates"`
	// Segments are the topology segments the specs place volumes and
	// snapshots in, each a map of topology key to value, best first. At
	// least two; every key one of DriverInfo.TopologyKeys; each segment
	// must have schedulable nodes with exactly these labels.
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
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + s[k]
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Load reads and strictly parses an extension file. It does not validate
// against the driver: see Validate.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("driver ext: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("driver ext %s: %w", path, err)
	}
	return f, nil
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
		return nil, fmt.Errorf("%s (known keys: snapshotTopology, featureGates.VolumeSnapshotTopology, segments, regionKey, regionWideSnapshotClassParameters, attachLimits.{%s})", msg, strings.Join(attachLimitsKeys, ", "))
	}
	return &f, nil
}

// Validate checks the file against the driver's topology keys
// (DriverInfo.TopologyKeys of the upstream driver file).
func (f *File) Validate(topologyKeys []string) error {
	if len(f.Segments) < 2 {
		return fmt.Errorf("segments: %d given, need at least two distinct segments with schedulable nodes", len(f.Segments))
	}
	if len(topologyKeys) == 0 {
		return fmt.Errorf("segments: the driver file's DriverInfo.TopologyKeys is empty, so no segment key can be checked; list the driver's topology keys there")
	}
	seen := map[string]int{}
	for i, s := range f.Segments {
		if len(s) == 0 {
			return fmt.Errorf("segments[%d]: empty segment", i)
		}
		for k, v := range s {
			if !slices.Contains(topologyKeys, k) {
				return fmt.Errorf("segments[%d]: key %q is not one of DriverInfo.TopologyKeys %v", i, k, topologyKeys)
			}
			if v == "" {
				return fmt.Errorf("segments[%d]: key %q has an empty value", i, k)
			}
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
	for k := range f.RegionWideSnapshotClassParameters {
		if k == "" {
			return fmt.Errorf("regionWideSnapshotClassParameters: empty key")
		}
	}
	if f.AttachLimits != nil {
		return f.AttachLimits.validate()
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
	if len(f.RegionWideSnapshotClassParameters) == 0 {
		return "driver ext: regionWideSnapshotClassParameters is not set, so no snapshot usable outside its source's segment can be made"
	}
	return ""
}

// OtherRegion returns the first segment whose RegionKey value differs from
// segments[0]'s, or why there is none.
func (f *File) OtherRegion() (Segment, string) {
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
	for _, s := range f.Segments[1:] {
		if f.RegionKey == "" || s[f.RegionKey] == f.Segments[0][f.RegionKey] {
			return s
		}
	}
	return nil
}
