package world

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/internal/yamlfile"
)

// Default topology keys, chosen so that StorageClass and
// VolumeSnapshotClass topology terms read naturally.
const (
	DefaultRegionKey = "topology.kubernetes.io/region"
	DefaultZoneKey   = "topology.kubernetes.io/zone"
	DefaultRackKey   = "zonepath.csi.dev/rack"
)

// Limits on what the driver accepts, so that a request cannot make it do
// unbounded work.
//
// MaxSegmentsPerRequirement bounds requisite and preferred, each. It must
// be at least what callers send for valid requests: the zonepath
// controllers send up to controllers/topology.MaxSegments segments (a
// VolumeSnapshotClass's allowedTopologies, a StorageClass narrowed to a
// snapshot's topology), and external-provisioner sends the cross product
// of a StorageClass's allowedTopologies values, so regions times zones.
// Hence the same 1024, which a test in controllers/topology holds the two
// to; at that size a request still costs the driver one pass over its
// zones per segment and stays far under gRPC's 4 MiB message limit.
const (
	MaxSegmentsPerRequirement = 1024
	maxNameLength             = 63
)

// Keys names the segment keys the driver reports and accepts.
type Keys struct {
	Region string `json:"region,omitempty"`
	Zone   string `json:"zone,omitempty"`
	Rack   string `json:"rack,omitempty"`
	// OmitRegion makes the driver report no region key, as drivers with
	// one zone key do; a requested segment with the region key then names
	// no zone, and zone names must be unique across regions.
	OmitRegion bool `json:"omitRegion,omitempty"`
	// OmitZone makes the driver report the region key alone, as drivers
	// whose storage spans a region (a regional array or file service) do:
	// volumes still live in one zone, but are reported and served as
	// usable from every zone of their region; a requested segment with
	// the zone key then names no topology of this driver.
	OmitZone bool `json:"omitZone,omitempty"`
	// NodeZone is a second zone key that only NodeGetInfo reports, with
	// the zone's name, beside Zone (as EBS's topology.ebs.csi.aws.com/zone
	// beside topology.kubernetes.io/zone); volumes and snapshots never
	// carry it. A requested segment with it selects the zone so named.
	NodeZone string `json:"nodeZone,omitempty"`
	// NodeOS is a key that only NodeGetInfo reports, with the value
	// NodeOSValue (as kubernetes.io/os). A requested segment with it
	// selects every zone when it says NodeOSValue, none otherwise.
	NodeOS string `json:"nodeOS,omitempty"`
}

// NodeOSValue is what a node reports under keys.nodeOS: the driver's
// node plugins run on Linux only.
const NodeOSValue = "linux"

// File is the on-disk topology description.
type File struct {
	Keys Keys `json:"keys,omitempty"`
	// MaxVolumesPerNode is the default attach limit of every node; 0 means
	// no limit is reported.
	MaxVolumesPerNode int64    `json:"maxVolumesPerNode,omitempty"`
	Regions           []Region `json:"regions"`
	// Nodes names the nodes the controller may publish to, where they
	// are and, optionally, their own attach limit.
	Nodes []Node `json:"nodes,omitempty"`
	// Snapshots says where snapshots are usable from when the
	// VolumeSnapshotClass does not, and where they may be cut.
	Snapshots Snapshots `json:"snapshots,omitempty"`
	// Volumes says how many zones hold every new volume.
	Volumes Volumes `json:"volumes,omitempty"`
	// PreattachedVolumesPerNode is how many volumes every node has
	// attached from the start (a root disk), counted against its limit.
	PreattachedVolumesPerNode int64 `json:"preattachedVolumesPerNode,omitempty"`
	// TerseErrors makes every error the driver returns say nothing but
	// its code's meaning: no zone, no object name, as some drivers do.
	TerseErrors bool `json:"terseErrors,omitempty"`
}

// Region is a named group of zones.
type Region struct {
	Name  string `json:"name"`
	Zones []Zone `json:"zones"`
}

// Zone is where volumes and snapshot copies live.
type Zone struct {
	Name string `json:"name"`
	// Capacity is the bytes of volumes the zone holds ("100Gi"); empty
	// means unlimited.
	Capacity string `json:"capacity,omitempty"`
	// SnapshotQuota is the number of snapshot copies the zone holds;
	// nil means unlimited, 0 means none.
	SnapshotQuota *int64   `json:"snapshotQuota,omitempty"`
	Racks         []string `json:"racks,omitempty"`
}

// Node is a node known to the controller.
type Node struct {
	ID string `json:"id"`
	// Zone is "region/zone", or a zone name unique across regions.
	Zone string `json:"zone"`
	Rack string `json:"rack,omitempty"`
	// MaxVolumesPerNode overrides the default attach limit when set.
	MaxVolumesPerNode *int64 `json:"maxVolumesPerNode,omitempty"`
	// PublishLimit is how many volumes ControllerPublishVolume lets the
	// node have, when more than the limit NodeGetInfo reports: an
	// advisory cap, as EBS's --reserved-volume-attachments or Cinder
	// leave the controller. 0: the reported limit.
	PublishLimit int64 `json:"publishLimit,omitempty"`
}

// NodeInfo is a validated node.
type NodeInfo struct {
	ID                string
	Zone              int
	Rack              string
	MaxVolumesPerNode int64
	// PublishLimit is the controller's own cap when above
	// MaxVolumesPerNode (Node.PublishLimit); 0: none of its own.
	PublishLimit int64
}

// ControllerLimit is how many volumes ControllerPublishVolume lets the
// node have: its own cap when it has one above the reported limit, else
// the reported limit (0: none).
func (n NodeInfo) ControllerLimit() int64 {
	return max(n.PublishLimit, n.MaxVolumesPerNode)
}

// ZoneInfo is a validated zone with its parsed limits.
type ZoneInfo struct {
	Region, Name string
	Racks        []string
	// CapacityBytes < 0 means unlimited.
	CapacityBytes int64
	// SnapshotQuota < 0 means unlimited.
	SnapshotQuota int64
}

// ID is the zone's stable identifier in the driver's state.
func (z ZoneInfo) ID() string { return z.Region + "/" + z.Name }

// Topology is a validated topology file.
type Topology struct {
	Keys Keys
	// TerseErrors: error messages carry only the code's meaning.
	TerseErrors bool
	// Snapshots has its DefaultScope filled in.
	Snapshots Snapshots
	// VolumeReplicas is how many zones of one region hold every new
	// volume: 1 unless volumes.replicas says more.
	VolumeReplicas    int
	Zones             []ZoneInfo
	byID              map[string]int
	maxVolumesPerNode int64
	preattached       int64
	nodes             map[string]NodeInfo
}

// nameRE is what region, zone and rack names may be: lower-case
// alphanumerics, '-' and '.', at most maxNameLength long, as they become
// label values. Not validation.IsDNS1123Label, which forbids the dots, nor
// IsDNS1123Subdomain, which allows 253 characters and refuses names this
// file format has always accepted ("a..b").
var nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// Load reads and validates a topology file.
func Load(path string) (*Topology, error) {
	return yamlfile.Load("topology file", path, Parse)
}

// Parse validates a topology description.
func Parse(data []byte) (*Topology, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	return f.Validate()
}

// Default is a world of one region with three zones of unlimited capacity
// and quota, used when no topology file is given.
func Default() *Topology {
	f := File{Regions: []Region{{Name: "region-1", Zones: []Zone{{Name: "zone-a"}, {Name: "zone-b"}, {Name: "zone-c"}}}}}
	t, err := f.Validate()
	if err != nil {
		panic(err) // a constant input: cannot fail
	}
	return t
}

// Validate checks names, limits and keys and returns the usable form.
func (f File) Validate() (*Topology, error) {
	t := &Topology{Keys: f.Keys.withDefaults(), byID: map[string]int{}, nodes: map[string]NodeInfo{}}
	if err := t.Keys.validate(); err != nil {
		return nil, err
	}
	if len(f.Regions) == 0 {
		return nil, fmt.Errorf("regions: at least one region is required")
	}
	if f.MaxVolumesPerNode < 0 {
		return nil, fmt.Errorf("maxVolumesPerNode: must not be negative, got %d", f.MaxVolumesPerNode)
	}
	t.maxVolumesPerNode = f.MaxVolumesPerNode
	regions := map[string]bool{}
	for ri, r := range f.Regions {
		if err := checkName(fmt.Sprintf("regions[%d].name", ri), r.Name); err != nil {
			return nil, err
		}
		if regions[r.Name] {
			return nil, fmt.Errorf("regions[%d]: duplicate region %q", ri, r.Name)
		}
		regions[r.Name] = true
		if len(r.Zones) == 0 {
			return nil, fmt.Errorf("regions[%d] (%s): at least one zone is required", ri, r.Name)
		}
		for zi, z := range r.Zones {
			info, err := z.validate(fmt.Sprintf("regions[%d].zones[%d]", ri, zi), r.Name)
			if err != nil {
				return nil, err
			}
			if _, dup := t.byID[info.ID()]; dup {
				return nil, fmt.Errorf("regions[%d].zones[%d]: duplicate zone %q", ri, zi, z.Name)
			}
			t.byID[info.ID()] = len(t.Zones)
			t.Zones = append(t.Zones, info)
		}
	}
	for i, n := range f.Nodes {
		info, err := t.validateNode(n)
		if err != nil {
			return nil, fmt.Errorf("nodes[%d]: %w", i, err)
		}
		if _, dup := t.nodes[n.ID]; dup {
			return nil, fmt.Errorf("nodes[%d]: duplicate node %q", i, n.ID)
		}
		t.nodes[n.ID] = info
	}
	if err := t.validateKnobs(f); err != nil {
		return nil, err
	}
	return t, nil
}

func (k Keys) withDefaults() Keys {
	if k.Region == "" {
		k.Region = DefaultRegionKey
	}
	if k.Zone == "" {
		k.Zone = DefaultZoneKey
	}
	if k.Rack == "" {
		k.Rack = DefaultRackKey
	}
	return k
}

// validate requires distinct label keys (three, and the node-only ones
// when set): segments are told apart by key, and the keys become node
// labels and topology selector terms.
func (k Keys) validate() error {
	seen := map[string]string{}
	pairs := [][2]string{{"region", k.Region}, {"zone", k.Zone}, {"rack", k.Rack}}
	if k.NodeZone != "" {
		pairs = append(pairs, [2]string{"nodeZone", k.NodeZone})
	}
	if k.NodeOS != "" {
		pairs = append(pairs, [2]string{"nodeOS", k.NodeOS})
	}
	for _, kv := range pairs {
		if errs := validation.IsQualifiedName(kv[1]); len(errs) > 0 {
			return fmt.Errorf("keys.%s: %q is not a label key: %s", kv[0], kv[1], strings.Join(errs, "; "))
		}
		if other, dup := seen[kv[1]]; dup {
			return fmt.Errorf("keys.%s: %q is already keys.%s", kv[0], kv[1], other)
		}
		seen[kv[1]] = kv[0]
	}
	return nil
}

func (z Zone) validate(field, region string) (ZoneInfo, error) {
	info := ZoneInfo{Region: region, Name: z.Name, CapacityBytes: -1, SnapshotQuota: -1}
	if err := checkName(field+".name", z.Name); err != nil {
		return info, err
	}
	if z.Capacity != "" {
		q, err := resource.ParseQuantity(z.Capacity)
		if err != nil || q.Sign() < 0 {
			return info, fmt.Errorf("%s.capacity: %q is not a non-negative quantity such as 100Gi", field, z.Capacity)
		}
		// ParseQuantity caps binary-suffixed values at MaxInt64, so "9Ei"
		// arrives as exactly MaxInt64: no binary multiple equals it.
		maxBytes := *resource.NewQuantity(math.MaxInt64, resource.BinarySI)
		if c := q.Cmp(maxBytes); c > 0 || c == 0 && q.Format == resource.BinarySI {
			return info, fmt.Errorf("%s.capacity: %q is more bytes than fit in 64 bits", field, z.Capacity)
		}
		info.CapacityBytes = q.Value()
	}
	if z.SnapshotQuota != nil {
		if *z.SnapshotQuota < 0 {
			return info, fmt.Errorf("%s.snapshotQuota: must not be negative, got %d", field, *z.SnapshotQuota)
		}
		info.SnapshotQuota = *z.SnapshotQuota
	}
	for i, r := range z.Racks {
		if err := checkName(fmt.Sprintf("%s.racks[%d]", field, i), r); err != nil {
			return info, err
		}
	}
	info.Racks = z.Racks
	return info, nil
}

func checkName(field, name string) error {
	if len(name) > maxNameLength || !nameRE.MatchString(name) {
		return fmt.Errorf("%s: %q must be a DNS-1123 label-like name of at most %d characters", field, name, maxNameLength)
	}
	return nil
}

// Index returns the index of the zone with the given ID.
func (t *Topology) Index(id string) (int, bool) {
	i, ok := t.byID[id]
	return i, ok
}

// Zone returns the zone with the given ID.
func (t *Topology) Zone(id string) (ZoneInfo, bool) {
	i, ok := t.byID[id]
	if !ok {
		return ZoneInfo{}, false
	}
	return t.Zones[i], true
}

func (t *Topology) validateNode(n Node) (NodeInfo, error) {
	info := NodeInfo{ID: n.ID, Rack: n.Rack, MaxVolumesPerNode: t.maxVolumesPerNode}
	if n.ID == "" || len(n.ID) > 128 {
		return info, fmt.Errorf("id is required, at most 128 characters")
	}
	zone, err := t.FindZone(n.Zone)
	if err != nil {
		return info, err
	}
	if _, err := t.NodeSegment(zone, n.Rack); err != nil {
		return info, err
	}
	info.Zone = zone
	if n.MaxVolumesPerNode != nil {
		if *n.MaxVolumesPerNode < 0 {
			return info, fmt.Errorf("maxVolumesPerNode must not be negative")
		}
		info.MaxVolumesPerNode = *n.MaxVolumesPerNode
	}
	return info, validatePublishLimit(n.PublishLimit, &info)
}

// validatePublishLimit: a publishLimit allows more than the node
// reports, never less: a controller refusing below max_volumes_per_node
// would fail pods the scheduler placed by it.
func validatePublishLimit(limit int64, info *NodeInfo) error {
	switch {
	case limit < 0:
		return fmt.Errorf("publishLimit must not be negative, got %d", limit)
	case limit > 0 && info.MaxVolumesPerNode == 0:
		return fmt.Errorf("publishLimit %d needs a maxVolumesPerNode to exceed: the node reports no attach limit", limit)
	case limit > 0 && limit < info.MaxVolumesPerNode:
		return fmt.Errorf("publishLimit %d is below the node's maxVolumesPerNode %d: it may only let the controller take more than the node reports", limit, info.MaxVolumesPerNode)
	}
	info.PublishLimit = limit
	return nil
}

// Node returns a node listed in the topology file.
func (t *Topology) Node(id string) (NodeInfo, bool) {
	n, ok := t.nodes[id]
	return n, ok
}

// DefaultMaxVolumesPerNode is the file's attach limit for nodes without
// their own; 0 means no limit.
func (t *Topology) DefaultMaxVolumesPerNode() int64 { return t.maxVolumesPerNode }

// HasRacks reports whether any zone is split into racks; only then do
// node segments carry the rack key.
func (t *Topology) HasRacks() bool {
	return slices.ContainsFunc(t.Zones, func(z ZoneInfo) bool { return len(z.Racks) > 0 })
}
