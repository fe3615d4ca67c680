package drivertest

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
)

// MountCapability is a single-node-writer filesystem volume.
func MountCapability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// BlockCapability is a single-node-writer raw block volume.
func BlockCapability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

// Capability is BlockCapability when block, else MountCapability.
func Capability(block bool) *csi.VolumeCapability {
	if block {
		return BlockCapability()
	}
	return MountCapability()
}

// VolumeRequest asks for a mount volume of size bytes; req may be nil.
func VolumeRequest(name string, size int64, req *csi.TopologyRequirement) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:                      name,
		CapacityRange:             &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities:        []*csi.VolumeCapability{MountCapability()},
		AccessibilityRequirements: req,
	}
}

// SnapshotRequest asks for a snapshot of source; req may be nil.
func SnapshotRequest(name, source string, req *csi.TopologyRequirement) *csi.CreateSnapshotRequest {
	return &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: source, AccessibilityRequirements: req}
}

// FromSnapshot is the content source of a volume restored from a snapshot.
func FromSnapshot(snapshotID string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
		Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snapshotID}}}
}

// Segment is a topology segment from key, value pairs; an odd last key is
// ignored.
func Segment(kv ...string) *csi.Topology {
	s := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i]] = kv[i+1]
	}
	return &csi.Topology{Segments: s}
}

// Requisite is a requirement that allows exactly segs.
func Requisite(segs ...*csi.Topology) *csi.TopologyRequirement {
	return &csi.TopologyRequirement{Requisite: segs}
}
