package driverext

import "fmt"

// HasVolumeTopology says whether the driver has
// VOLUME_ACCESSIBILITY_CONSTRAINTS (volumeTopology, default true).
func (f *File) HasVolumeTopology() bool { return f.VolumeTopology == nil || *f.VolumeTopology }

// validateNoTopology checks a file for a driver without volume topology:
// nothing in it may name a segment, since the driver has none.
func (f *File) validateNoTopology() error {
	switch {
	case len(f.Segments) > 0:
		return fmt.Errorf("segments: %d given with volumeTopology: false; a driver without VOLUME_ACCESSIBILITY_CONSTRAINTS has no segments", len(f.Segments))
	case f.NodeLocal:
		return fmt.Errorf("nodeLocal: true with volumeTopology: false; a node-local driver reports its node as a segment")
	case f.RegionKey != "":
		return fmt.Errorf("regionKey: set with volumeTopology: false; the driver reports no topology key")
	case f.Exhaustion != nil:
		return fmt.Errorf("exhaustion: set with volumeTopology: false; its exhaustedSegment needs volume topology")
	case f.ZoneOutage != nil:
		return fmt.Errorf("zoneOutage: set with volumeTopology: false; its segment needs volume topology")
	}
	if f.AttachLimits != nil {
		return f.AttachLimits.validate()
	}
	return nil
}

// SegmentsMissing is why a spec that places volumes in n segments of the
// file cannot run, or "" when it can: the driver has no volume topology,
// or the file lists fewer segments (a cluster of one zone).
func (f *File) SegmentsMissing(n int) string {
	switch {
	case !f.HasVolumeTopology():
		return "driver ext: volumeTopology is false (the driver lacks VOLUME_ACCESSIBILITY_CONSTRAINTS): the spec places volumes in segments"
	case len(f.Segments) < n:
		return fmt.Sprintf("driver ext: segments lists %d segment(s); the spec needs %d", len(f.Segments), n)
	}
	return ""
}

// noTopologyMissing is SegmentsMissing's reason for a driver without
// volume topology, or "": the first reason of every declaration that
// names a place (exhaustion, zoneOutage, regionKey, snapshot scopes),
// which such a driver cannot have.
func (f *File) noTopologyMissing() string {
	if f.HasVolumeTopology() {
		return ""
	}
	return f.SegmentsMissing(0)
}

// nodeLocalWhy is the start of every skip reason of a node-local driver.
const nodeLocalWhy = "driver ext: nodeLocal is true: "

// NodeLocalMissing is why a spec about a node the driver is not installed
// on cannot run for a node-local driver, or "": such a driver's volume is
// usable on the node holding it only, so none can be provisioned for a
// node without the driver (KEP-5030's missing-driver cases).
func (f *File) NodeLocalMissing() string {
	if f.NodeLocal {
		return nodeLocalWhy + "a volume is usable only on the node that holds it, so no volume can be provisioned for a node without the driver"
	}
	return ""
}
