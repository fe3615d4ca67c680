package world

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Snapshot scopes: where a snapshot is usable from.
const (
	// ScopeZone: the zones holding a copy.
	ScopeZone = "zone"
	// ScopeRegion: every zone of the regions holding a copy.
	ScopeRegion = "region"
	// ScopeGlobal: every zone; no accessible_topology is reported.
	ScopeGlobal = "global"
)

// Snapshots are the snapshot behaviours a topology file chooses, so that
// one driver plays the families of drivers vendors ship.
type Snapshots struct {
	// DefaultScope is the scope of a snapshot whose CreateSnapshot call
	// names none (zonepath.csi.dev/snapshotScope); "" means zone.
	DefaultScope string `json:"defaultScope,omitempty"`
	// SourceZoneOnly: a snapshot is cut only in its source volume's zone,
	// in one copy; a requisite without that zone is RESOURCE_EXHAUSTED.
	SourceZoneOnly bool `json:"sourceZoneOnly,omitempty"`
	// ReadyAfter is how long after it is cut a snapshot (and a group
	// snapshot) becomes ready_to_use, as a cloud snapshot that uploads
	// (spec.md "The ready_to_use Parameter"); 0: at once.
	ReadyAfter metav1.Duration `json:"readyAfter,omitempty"`
	// GroupsInOneZone: CreateVolumeGroupSnapshot of volumes in more than
	// one zone is FAILED_PRECONDITION, as drivers whose consistency
	// groups live on one array or in one zone answer.
	GroupsInOneZone bool `json:"groupsInOneZone,omitempty"`
	// RestoreWhereCutOnly: a snapshot restores only in the zones holding
	// its copies, even when the driver does not advertise
	// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS, as a node-local driver's local
	// copy (csi-driver-host-path, TopoLVM); a requisite without them is
	// RESOURCE_EXHAUSTED. Snapshots are then zonal only.
	RestoreWhereCutOnly bool `json:"restoreWhereCutOnly,omitempty"`
}

// Volumes are the volume behaviours a topology file chooses.
type Volumes struct {
	// Replicas is how many zones of one region hold every new volume, as
	// GCE regional PD and replicated arrays do: the volume is accessible
	// from each (TopologyRequirement, x > n: the SP "MAY choose the
	// remaining x-n unique topologies"). Absent: 1. Every region must
	// have as many zones, and the driver must report a region key.
	Replicas *int `json:"replicas,omitempty"`
}

// validateKnobs checks the settings that make the driver play another
// driver family, after zones and nodes are known.
func (t *Topology) validateKnobs(f File) error {
	if t.Keys.OmitRegion {
		if err := t.uniqueZoneNames(); err != nil {
			return err
		}
	}
	t.Snapshots = f.Snapshots
	t.TerseErrors = f.TerseErrors
	if err := t.validateOmitZone(); err != nil {
		return err
	}
	if err := t.validateReplicas(f.Volumes); err != nil {
		return err
	}
	if t.Snapshots.ReadyAfter.Duration < 0 {
		return fmt.Errorf("snapshots.readyAfter: must not be negative, got %s", t.Snapshots.ReadyAfter.Duration)
	}
	switch t.Snapshots.DefaultScope {
	case "":
		t.Snapshots.DefaultScope = ScopeZone
	case ScopeZone:
	case ScopeGlobal:
		if t.Snapshots.RestoreWhereCutOnly {
			return fmt.Errorf("snapshots.defaultScope: %q says a snapshot is usable from every zone, but snapshots.restoreWhereCutOnly restores it only where it is cut", ScopeGlobal)
		}
	case ScopeRegion:
		if t.Snapshots.RestoreWhereCutOnly {
			return fmt.Errorf("snapshots.defaultScope: %q says a snapshot is usable from its whole region, but snapshots.restoreWhereCutOnly restores it only where it is cut", ScopeRegion)
		}
		if t.Keys.OmitRegion {
			return fmt.Errorf("snapshots.defaultScope: %q needs a region key, but keys.omitRegion is set", ScopeRegion)
		}
	default:
		return fmt.Errorf("snapshots.defaultScope: %q must be %s, %s or %s", t.Snapshots.DefaultScope, ScopeZone, ScopeRegion, ScopeGlobal)
	}
	return t.validatePreattached(f)
}

// validateOmitZone refuses what cannot go with a driver that reports
// regions only: no key at all, keys narrower than a region that only
// nodes would carry (a rack, keys.nodeZone) and would then be told apart
// by nothing the volumes carry, and settings that keep a volume or a
// snapshot to zones the CO cannot see (replicas in named zones, restores
// only in a snapshot's zones).
func (t *Topology) validateOmitZone() error {
	if !t.Keys.OmitZone {
		return nil
	}
	switch {
	case t.Keys.OmitRegion:
		return fmt.Errorf("keys.omitZone and keys.omitRegion: the driver would report no key at all; drop one (a driver without topology disables VOLUME_ACCESSIBILITY_CONSTRAINTS instead)")
	case t.Keys.NodeZone != "":
		return fmt.Errorf("keys.nodeZone: %q is a zone key, but keys.omitZone reports the region alone", t.Keys.NodeZone)
	case t.HasRacks():
		return fmt.Errorf("keys.omitZone: zones have racks, but a rack lies inside a zone the driver does not report; remove the racks")
	case t.Snapshots.RestoreWhereCutOnly:
		return fmt.Errorf("snapshots.restoreWhereCutOnly: restores a snapshot only in its copies' zones, which keys.omitZone does not report")
	}
	return nil
}

// validateReplicas sets VolumeReplicas. A count no region can hold, or
// replicas in "one region" of a driver that reports none, would make
// every CreateVolume fail or mislead the CO, so they stop the driver.
func (t *Topology) validateReplicas(v Volumes) error {
	t.VolumeReplicas = 1
	if v.Replicas == nil {
		return nil
	}
	n := *v.Replicas
	switch {
	case n < 1:
		return fmt.Errorf("volumes.replicas: %d must be at least 1 (absent: 1, a volume in one zone)", n)
	case n == 1:
		return nil
	case t.Keys.OmitRegion:
		return fmt.Errorf("volumes.replicas: %d places a volume in zones of one region, but keys.omitRegion reports no region", n)
	case t.Keys.OmitZone:
		return fmt.Errorf("volumes.replicas: %d: under keys.omitZone every volume is already usable from its whole region, and its zones are not reported", n)
	}
	zones := map[string]int{}
	for _, z := range t.Zones {
		zones[z.Region]++
	}
	for _, z := range t.Zones {
		if zones[z.Region] < n {
			return fmt.Errorf("volumes.replicas: %d is more than the %d zones of region %s", n, zones[z.Region], z.Region)
		}
	}
	t.VolumeReplicas = n
	return nil
}

// uniqueZoneNames: without a region key a segment tells zones apart by
// name alone.
func (t *Topology) uniqueZoneNames() error {
	seen := map[string]string{}
	for _, z := range t.Zones {
		if other, dup := seen[z.Name]; dup {
			return fmt.Errorf("keys.omitRegion: zone %q is in regions %s and %s; without a region key zone names must be unique", z.Name, other, z.Region)
		}
		seen[z.Name] = z.Region
	}
	return nil
}

// validatePreattached requires room for at least one publish on every
// node with a limit: a node whose pre-attached volumes fill its limit
// could never take a volume, which is no driver anyone ships.
func (t *Topology) validatePreattached(f File) error {
	n := f.PreattachedVolumesPerNode
	if n < 0 {
		return fmt.Errorf("preattachedVolumesPerNode: must not be negative, got %d", n)
	}
	if n == 0 {
		return nil
	}
	if t.maxVolumesPerNode <= n {
		return fmt.Errorf("preattachedVolumesPerNode: %d must be less than maxVolumesPerNode (%d)", n, t.maxVolumesPerNode)
	}
	for i, node := range f.Nodes {
		if limit := t.nodes[node.ID].MaxVolumesPerNode; limit > 0 && limit <= n {
			return fmt.Errorf("nodes[%d]: maxVolumesPerNode %d must be more than preattachedVolumesPerNode (%d)", i, limit, n)
		}
	}
	t.preattached = n
	return nil
}

// PreattachedVolumesPerNode is how many volumes count against every
// node's attach limit before any publish.
func (t *Topology) PreattachedVolumesPerNode() int64 { return t.preattached }

// NodeLabelKeys are the keys of the node labels that place a node
// (--node-topology-from-labels): the keys the driver puts in segments it
// reports (the region key unless omitted, the zone key, and the rack
// key), and under keys.omitZone the zone key too, since the node still
// stands in one zone.
func (t *Topology) NodeLabelKeys() []string {
	if t.Keys.OmitZone {
		return []string{t.Keys.Region, t.Keys.Zone}
	}
	if t.Keys.OmitRegion {
		return []string{t.Keys.Zone, t.Keys.Rack}
	}
	return []string{t.Keys.Region, t.Keys.Zone, t.Keys.Rack}
}
