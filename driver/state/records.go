package state

import "time"

// Volume is a provisioned volume.
type Volume struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	CapacityBytes int64  `json:"capacityBytes"`
	Zone          string `json:"zone"`
	// Replicas are the other zones holding a replica of a regional
	// volume (topology file volumes.replicas), in the order chosen. The
	// volume is accessible from each, and its bytes count in each.
	Replicas   []string          `json:"replicas,omitempty"`
	Block      bool              `json:"block,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	// MutableParameters are the current values of the parameters that
	// ControllerModifyVolume changes, as CreateVolume's
	// mutable_parameters and every modification since have set them.
	MutableParameters map[string]string `json:"mutableParameters,omitempty"`
	// SourceSnapshot and SourceVolume record the volume_content_source,
	// so that a repeated CreateVolume can be checked for compatibility.
	SourceSnapshot string    `json:"sourceSnapshot,omitempty"`
	SourceVolume   string    `json:"sourceVolume,omitempty"`
	Created        time.Time `json:"created"`

	vis visibility
}

// Zones are the zones holding the volume: Zone, then its replicas.
func (v *Volume) Zones() []string { return append([]string{v.Zone}, v.Replicas...) }

// Snapshot is a cut snapshot and the zones holding its copies.
type Snapshot struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	SourceVolume string `json:"sourceVolume"`
	SizeBytes    int64  `json:"sizeBytes"`
	// Zones hold one copy each; every copy counts against its zone's quota.
	Zones []string `json:"zones"`
	// Region is set when the snapshot is usable from the whole region
	// of its copies rather than from the copy zones only.
	RegionWide bool `json:"regionWide,omitempty"`
	// Global is set when the snapshot is usable from every zone, wherever
	// its copies are; it has no accessible_topology.
	Global     bool              `json:"global,omitempty"`
	Parameters map[string]string `json:"parameters,omitempty"`
	// Group is the ID of the group snapshot this one is a member of. A
	// member has no name of its own: it is found through its group.
	Group   string    `json:"group,omitempty"`
	Created time.Time `json:"created"`

	vis visibility
}

// Group is a volume group snapshot: one member Snapshot per source
// volume, each recorded under its own ID with Group set to this ID.
type Group struct {
	ID            string            `json:"id"`
	Name          string            `json:"name"`
	SourceVolumes []string          `json:"sourceVolumes"`
	Snapshots     []string          `json:"snapshots"`
	Parameters    map[string]string `json:"parameters,omitempty"`
	Created       time.Time         `json:"created"`
	// Deleting is set by a DeleteVolumeGroupSnapshot before it removes
	// the members' data, so that a retry after a failure there finds the
	// group and finishes the job.
	Deleting bool `json:"deleting,omitempty"`

	vis visibility
}

// Publication records a volume published to a node by ControllerPublish.
type Publication struct {
	VolumeID string `json:"volumeId"`
	NodeID   string `json:"nodeId"`
	// Readonly is set when the volume was published read-only: asked
	// for, or implied by a reader-only access mode.
	Readonly bool `json:"readonly,omitempty"`
	// Mode is the access mode the publish was made with (a csi
	// VolumeCapability_AccessMode_Mode name), which limits the volume's
	// other publications; empty in records of drivers from before it was
	// kept, which limit nothing beyond Readonly.
	Mode string `json:"mode,omitempty"`

	vis visibility
}

// Mount records a node-side stage or publish of a volume at a path.
type Mount struct {
	VolumeID string `json:"volumeId"`
	// Path is the staging or target path the CO gave.
	Path     string `json:"path"`
	Staging  bool   `json:"staging,omitempty"`
	Readonly bool   `json:"readonly,omitempty"`
	Block    bool   `json:"block,omitempty"`
	// Flags are the supported mount_flags of the volume capability,
	// sorted, without repeats.
	Flags []string `json:"flags,omitempty"`
	// Mounted is false when the driver could not mount and only
	// created the path (for example without CAP_SYS_ADMIN).
	Mounted bool `json:"mounted,omitempty"`

	vis visibility
}

// visibility tracks when a record became durable and when its deletion
// did, so that readers see only what has been acknowledged.
type visibility struct {
	created uint64
	deleted uint64
	// prev is the durable row this one replaces, shown to readers until
	// this one is durable.
	prev any
}

func (v visibility) visible(durable uint64) bool {
	return v.created <= durable && (v.deleted == 0 || v.deleted > durable)
}

func (v visibility) live() bool { return v.deleted == 0 }
