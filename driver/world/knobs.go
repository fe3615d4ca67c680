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
	if t.Snapshots.ReadyAfter.Duration < 0 {
		return fmt.Errorf("snapshots.readyAfter: must not be negative, got %s", t.Snapshots.ReadyAfter.Duration)
	}
	switch t.Snapshots.DefaultScope {
	case "":
		t.Snapshots.DefaultScope = ScopeZone
	case ScopeZone, ScopeGlobal:
	case ScopeRegion:
		if t.Keys.OmitRegion {
			return fmt.Errorf("snapshots.defaultScope: %q needs a region key, but keys.omitRegion is set", ScopeRegion)
		}
	default:
		return fmt.Errorf("snapshots.defaultScope: %q must be %s, %s or %s", t.Snapshots.DefaultScope, ScopeZone, ScopeRegion, ScopeGlobal)
	}
	return t.validatePreattached(f)
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

// ReportedKeys are the keys the driver puts in segments it reports: the
// region key unless omitted, the zone key, and the rack key.
func (t *Topology) ReportedKeys() []string {
	if t.Keys.OmitRegion {
		return []string{t.Keys.Zone, t.Keys.Rack}
	}
	return []string{t.Keys.Region, t.Keys.Zone, t.Keys.Rack}
}
