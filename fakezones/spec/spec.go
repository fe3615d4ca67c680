package spec

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/internal/yamlfile"
)

// Registration says how a node's zonepath node plugin is registered, the
// cases KEP-5030 distinguishes.
type Registration string

const (
	// Registered: the node plugin runs and is registered at once: a
	// CSINode entry with its topology keys and attach limit, and node
	// labels for its segment.
	Registered Registration = "registered"
	// Late: as Registered, but only after RegisterAfter.
	Late Registration = "late"
	// NoDriver: the node has a CSINode without a zonepath entry, as a
	// kubelet without the driver installed reports it.
	NoDriver Registration = "no-driver"
	// NoCSINode: the node has no CSINode object at all.
	NoCSINode Registration = "no-csinode"
	// OnLabel: the node plugin runs, but is registered only while the Node
	// carries RegisterLabel=true and deregistered when the label goes, as
	// a node plugin DaemonSet with that nodeSelector would be on a real
	// cluster. A test triggers a late registration with it, through the
	// API, instead of racing RegisterAfter's timer.
	OnLabel Registration = "on-label"
)

// RegisterLabel is the Node label that registers an OnLabel node's plugin
// when it is "true".
const RegisterLabel = "zonepath.csi.dev/register"

// Limits that keep a typo from starting far more fake nodes than a
// machine serves: 5,000 nodes take about 4 GB here, and the zone and
// node names stay short (zone-a to zone-cv).
const (
	MaxZones        = 100
	MaxNodesPerZone = 5000
	MaxNodes        = 10000
	MaxRegions      = MaxZones
	MaxRacksPerZone = 100
)

// File is the cluster file.
type File struct {
	// Regions is how many regions (region-1, region-2, ...) the zones are
	// spread over, round robin. Default 1.
	Regions int `json:"regions,omitempty"`
	// Zones is how many zones (zone-a, zone-b, ...) there are. Default 3.
	Zones int `json:"zones,omitempty"`
	// NodesPerZone is how many kwok nodes each zone has. Default 2.
	NodesPerZone int `json:"nodesPerZone,omitempty"`
	// MaxVolumesPerNode is every node's attach limit; 0 means none is
	// reported (CSINode allocatable stays unset).
	MaxVolumesPerNode int64 `json:"maxVolumesPerNode,omitempty"`
	// SnapshotQuotas limits the snapshot copies of single zones, by zone
	// name, so that a test can exhaust one (RESOURCE_EXHAUSTED).
	SnapshotQuotas map[string]int64 `json:"snapshotQuotas,omitempty"`
	// Capacities are the bytes of volumes single zones hold ("10Gi"), by
	// zone name, so that zones differ in the room GetCapacity reports and
	// the CSIStorageCapacity objects publish; other zones are unlimited.
	Capacities map[string]resource.Quantity `json:"capacities,omitempty"`
	// Nodes overrides single nodes by name.
	Nodes []NodeOverride `json:"nodes,omitempty"`
	// ExtraDrivers are more instances of the zonepath driver under other
	// names, each with its own controller, sidecars, node plugins (on
	// every node that has the main driver), CSIDriver and classes: a
	// second driver in the same cluster, for example one that lacks a
	// capability.
	ExtraDrivers []ExtraDriver `json:"extraDrivers,omitempty"`
	// Driver configures the driver's topology file beyond the zones and
	// nodes, so that zonepath plays another driver family; the extra
	// drivers share it.
	Driver DriverSettings `json:"driver,omitempty"`
	// WellKnownNodeLabels false creates the kwok nodes without the
	// topology.kubernetes.io/* labels: their topology labels then come
	// only from the node plugins' registration, as kubelet's do. Default
	// true.
	WellKnownNodeLabels *bool `json:"wellKnownNodeLabels,omitempty"`
	// StorageCapacity false installs the CSIDrivers without
	// storageCapacity: true, so that the scheduler ignores the
	// CSIStorageCapacity objects the provisioners still publish, as in a
	// cluster that never turned capacity tracking on. Default true.
	StorageCapacity *bool `json:"storageCapacity,omitempty"`
	// ControllerAttachDetach true gives every kwok node the annotation
	// that kubelet's --enable-controller-attach-detach (on by default)
	// sets: kube-controller-manager's attach-detach controller then makes
	// a VolumeAttachment for each claim of a pod placed on the node, and
	// the attacher sidecars call ControllerPublishVolume and, once the pod
	// is gone, ControllerUnpublishVolume. Default false: kwok pods use no
	// volume, so the attachments only cost calls, and the specs judge
	// nothing by them; a cluster that exercises the attach path (a
	// personality whose fault rules fail ControllerPublishVolume) turns it
	// on.
	ControllerAttachDetach bool `json:"controllerAttachDetach,omitempty"`
}

// SchedulesByCapacity says whether the CSIDrivers ask the scheduler to
// read CSIStorageCapacity objects (File.StorageCapacity).
func (f File) SchedulesByCapacity() bool { return f.StorageCapacity == nil || *f.StorageCapacity }

// DriverSettings are the cluster file's driver section.
type DriverSettings struct {
	// Topology goes verbatim into the driver's topology file, beside the
	// regions, zones and nodes the cluster generates.
	Topology DriverTopology `json:"topology,omitempty"`
	// RacksPerZone splits every zone into rack-1 ... rack-N, the nodes of
	// a zone spread over them round robin; node segments then carry the
	// rack key. 0: no racks.
	RacksPerZone int `json:"racksPerZone,omitempty"`
}

// DriverTopology is what a cluster file may set of the driver's topology
// file (driver/README.md, Topology file).
type DriverTopology struct {
	Keys                      world.Keys      `json:"keys,omitempty"`
	Snapshots                 world.Snapshots `json:"snapshots,omitempty"`
	Volumes                   world.Volumes   `json:"volumes,omitempty"`
	PreattachedVolumesPerNode int64           `json:"preattachedVolumesPerNode,omitempty"`
	TerseErrors               bool            `json:"terseErrors,omitempty"`
}

// ExtraDriver is one more zonepath driver instance.
type ExtraDriver struct {
	// Name is its CSI driver name, other than zonepath.csi.dev.
	Name string `json:"name"`
	// DisableCapabilities are the plugin capabilities it does not
	// advertise (zonepath --disable-capabilities), so that it plays a
	// driver without them.
	DisableCapabilities []string `json:"disableCapabilities,omitempty"`
	// StrictTopology runs its provisioner with --strict-topology: a
	// WaitForFirstConsumer claim's CreateVolume gets only the selected
	// node's segment as requisite, as node-local drivers deploy it
	// (csi-driver-host-path's distributed provisioning), so the driver
	// cannot answer with a volume on another node.
	StrictTopology bool `json:"strictTopology,omitempty"`
	// TerseErrors gives it the topology file's terseErrors beside the
	// cluster's driver settings, so that one cluster runs a driver whose
	// errors name nothing next to one whose errors do.
	TerseErrors bool `json:"terseErrors,omitempty"`
}

// NodeOverride changes one node.
type NodeOverride struct {
	Name              string          `json:"name"`
	Registration      Registration    `json:"registration,omitempty"`
	RegisterAfter     metav1.Duration `json:"registerAfter,omitempty"`
	MaxVolumesPerNode *int64          `json:"maxVolumesPerNode,omitempty"`
	// PublishLimit lets the driver's controller publish more volumes to
	// the node than its maxVolumesPerNode, which NodeGetInfo still
	// reports (the topology file's nodes[].publishLimit, an advisory
	// cap); the driver checks it at start.
	PublishLimit int64 `json:"publishLimit,omitempty"`
}

// Node is one expanded fake node.
type Node struct {
	Name, Region, Zone string
	// Rack is "" unless the cluster has racks.
	Rack string
	// WellKnownLabels says whether the Node object carries the
	// topology.kubernetes.io/* labels (File.WellKnownNodeLabels).
	WellKnownLabels   bool
	Registration      Registration
	RegisterAfter     time.Duration
	MaxVolumesPerNode int64
	// PublishLimit is NodeOverride.PublishLimit; 0: none.
	PublishLimit int64
	// ControllerAttachDetach is File.ControllerAttachDetach.
	ControllerAttachDetach bool
}

// HasDriver says whether the node runs a zonepath node plugin.
func (n Node) HasDriver() bool {
	return n.Registration == Registered || n.Registration == Late || n.Registration == OnLabel
}

// RegistersAtStart says whether the node's plugin is in its CSINode as
// soon as the cluster is up.
func (n Node) RegistersAtStart() bool { return n.Registration == Registered }

// Cluster is a validated, expanded cluster file.
type Cluster struct {
	File
	Nodes []Node
	// Keys are the driver's topology keys, defaults filled in: the keys
	// of the classes the cluster installs.
	Keys world.Keys
}

// Drivers are the names of every driver the cluster runs: zonepath's,
// then the extra ones in file order.
func (c *Cluster) Drivers() []string {
	names := []string{plugin.DefaultName}
	for _, d := range c.ExtraDrivers {
		names = append(names, d.Name)
	}
	return names
}

// Load reads a cluster file; an empty path gives the defaults.
func Load(path string) (*Cluster, error) {
	if path == "" {
		return File{}.Expand()
	}
	return yamlfile.Load("cluster file", path, func(data []byte) (*Cluster, error) {
		var f File
		if err := yaml.UnmarshalStrict(data, &f); err != nil {
			return nil, err
		}
		return f.Expand()
	})
}

// Expand fills in defaults, validates and names every node.
func (f File) Expand() (*Cluster, error) {
	f.defaults()
	if err := f.validate(); err != nil {
		return nil, err
	}
	nodes := f.nodes()
	byName := make(map[string]int, len(nodes))
	for i, n := range nodes {
		byName[n.Name] = i
	}
	seen := sets.New[string]()
	for _, o := range f.Nodes {
		i, ok := byName[o.Name]
		if !ok {
			return nil, fmt.Errorf("nodes: %q is not a node of this cluster (nodes are named like %s)", o.Name, nodes[0].Name)
		}
		if seen.Has(o.Name) {
			return nil, fmt.Errorf("nodes: %q is listed twice", o.Name)
		}
		seen.Insert(o.Name)
		if err := o.apply(&nodes[i]); err != nil {
			return nil, fmt.Errorf("nodes: %q: %w", o.Name, err)
		}
	}
	cl := &Cluster{File: f, Nodes: nodes}
	topo, err := cl.ParseDriverTopology()
	if err != nil {
		return nil, err
	}
	cl.Keys = topo.Keys
	return cl, nil
}

// ParseDriverTopology renders the driver's topology file and parses it as
// the driver will, so that a mistake in the driver section stops the
// cluster file before any process starts.
func (c *Cluster) ParseDriverTopology() (*world.Topology, error) {
	data, err := c.DriverTopologyYAML()
	if err != nil {
		return nil, err
	}
	topo, err := world.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("driver: the topology file it makes is not one the driver takes: %w", err)
	}
	return topo, nil
}

// DriverTopologyYAML is the driver's topology file.
func (c *Cluster) DriverTopologyYAML() ([]byte, error) {
	return yaml.Marshal(c.DriverTopology())
}

// ExtraDriverTopologyYAML is the topology file of an extra driver: the
// main driver's, with the extra driver's own settings.
func (c *Cluster) ExtraDriverTopologyYAML(d ExtraDriver) ([]byte, error) {
	f := c.DriverTopology()
	f.TerseErrors = f.TerseErrors || d.TerseErrors
	return yaml.Marshal(f)
}

func (f *File) defaults() {
	if f.Regions == 0 {
		f.Regions = 1
	}
	if f.Zones == 0 {
		f.Zones = 3
	}
	if f.NodesPerZone == 0 {
		f.NodesPerZone = 2
	}
}

func (f File) validate() error {
	switch {
	case f.Zones < 1 || f.Zones > MaxZones:
		return fmt.Errorf("zones: %d is not between 1 and %d", f.Zones, MaxZones)
	case f.Regions < 1 || f.Regions > f.Zones:
		return fmt.Errorf("regions: %d is not between 1 and the number of zones (%d)", f.Regions, f.Zones)
	case f.NodesPerZone < 1 || f.NodesPerZone > MaxNodesPerZone:
		return fmt.Errorf("nodesPerZone: %d is not between 1 and %d", f.NodesPerZone, MaxNodesPerZone)
	case f.Zones*f.NodesPerZone > MaxNodes:
		return fmt.Errorf("zones x nodesPerZone: %d x %d is %d nodes, over the %d a cluster may have", f.Zones, f.NodesPerZone, f.Zones*f.NodesPerZone, MaxNodes)
	case f.MaxVolumesPerNode < 0:
		return fmt.Errorf("maxVolumesPerNode: %d is negative", f.MaxVolumesPerNode)
	case f.Driver.RacksPerZone < 0 || f.Driver.RacksPerZone > MaxRacksPerZone:
		return fmt.Errorf("driver.racksPerZone: %d is not between 0 and %d", f.Driver.RacksPerZone, MaxRacksPerZone)
	}
	if err := f.validateExtraDrivers(); err != nil {
		return err
	}
	// In key order, so that a file with several bad quotas always names the same first.
	for _, zone := range slices.Sorted(maps.Keys(f.SnapshotQuotas)) {
		quota := f.SnapshotQuotas[zone]
		if !f.hasZone(zone) {
			return fmt.Errorf("snapshotQuotas: %q is not a zone of this cluster (%s to %s)", zone, ZoneName(0), ZoneName(f.Zones-1))
		}
		if quota < 0 {
			return fmt.Errorf("snapshotQuotas: %s: %d is negative", zone, quota)
		}
	}
	return f.validateCapacities()
}

// validateCapacities checks that each capacity names a zone of the
// cluster and is not negative, in zone order.
func (f File) validateCapacities() error {
	for _, zone := range slices.Sorted(maps.Keys(f.Capacities)) {
		c := f.Capacities[zone]
		if !f.hasZone(zone) {
			return fmt.Errorf("capacities: %q is not a zone of this cluster (%s to %s)", zone, ZoneName(0), ZoneName(f.Zones-1))
		}
		if c.Sign() < 0 {
			return fmt.Errorf("capacities: %s: %s is negative", zone, c.String())
		}
	}
	return nil
}

// validateExtraDrivers checks each extra driver's name (a CSI name that
// is also a CSIDriver object's name, unique in the cluster) and the
// capabilities it disables.
func (f File) validateExtraDrivers() error {
	seen := sets.New(plugin.DefaultName)
	for i, d := range f.ExtraDrivers {
		where := fmt.Sprintf("extraDrivers[%d]", i)
		if err := plugin.ValidateName(d.Name); err != nil {
			return fmt.Errorf("%s.name: %w", where, err)
		}
		// The CSIDriver object, and the classes named after the driver,
		// need a lowercase DNS subdomain.
		if errs := validation.IsDNS1123Subdomain(d.Name); len(errs) > 0 {
			return fmt.Errorf("%s.name: %q: %s", where, d.Name, strings.Join(errs, "; "))
		}
		if seen.Has(d.Name) {
			return fmt.Errorf("%s.name: %q is already a driver of this cluster", where, d.Name)
		}
		seen.Insert(d.Name)
		if slices.Contains(d.DisableCapabilities, plugin.CapControllerService) {
			return fmt.Errorf("%s.disableCapabilities: %s cannot be disabled: the driver's sidecars need the controller service", where, plugin.CapControllerService)
		}
		if err := new(plugin.Config).DisableCapabilities(d.DisableCapabilities); err != nil {
			return fmt.Errorf("%s.disableCapabilities: %w", where, err)
		}
	}
	return nil
}

func (f File) hasZone(name string) bool {
	for z := 0; z < f.Zones; z++ {
		if ZoneName(z) == name {
			return true
		}
	}
	return false
}

func (o NodeOverride) apply(n *Node) error {
	switch o.Registration {
	case "":
	case Registered, Late, NoDriver, NoCSINode, OnLabel:
		n.Registration = o.Registration
	default:
		return fmt.Errorf("registration %q is not one of %s, %s, %s, %s, %s", o.Registration, Registered, Late, NoDriver, NoCSINode, OnLabel)
	}
	after := o.RegisterAfter.Duration
	if after < 0 {
		return fmt.Errorf("registerAfter %v is negative", after)
	}
	if after > 0 && n.Registration != Late {
		return fmt.Errorf("registerAfter needs registration %q", Late)
	}
	n.RegisterAfter = after
	if n.Registration == Late && n.RegisterAfter == 0 {
		n.RegisterAfter = 30 * time.Second
	}
	if o.MaxVolumesPerNode != nil {
		if *o.MaxVolumesPerNode < 0 {
			return fmt.Errorf("maxVolumesPerNode %d is negative", *o.MaxVolumesPerNode)
		}
		n.MaxVolumesPerNode = *o.MaxVolumesPerNode
	}
	n.PublishLimit = o.PublishLimit
	return nil
}

// ZoneName is the name of the i-th zone: zone-a to zone-z, then zone-aa,
// zone-ab ... zone-az, zone-ba ..., like spreadsheet columns, so that the
// first 26 keep their names and every name is a DNS label.
func ZoneName(i int) string { return "zone-" + zoneLetters(i) }

// zoneLetters writes i in bijective base 26 with the digits a to z: every
// string of letters is the name of exactly one index.
func zoneLetters(i int) string {
	var b []byte
	for i++; i > 0; i = (i - 1) / 26 {
		b = append(b, byte('a'+(i-1)%26))
	}
	slices.Reverse(b)
	return string(b)
}

// RegionName is the name of the i-th region: region-1, region-2, ...
func RegionName(i int) string { return fmt.Sprintf("region-%d", i+1) }

// RegionOf is the region of the i-th zone: zones go round robin.
func (f File) RegionOf(zone int) string { return RegionName(zone % f.Regions) }

// RackName is the name of the i-th rack of a zone: rack-1, rack-2, ...
func RackName(i int) string { return fmt.Sprintf("rack-%d", i+1) }

func (f File) nodes() []Node {
	nodes := make([]Node, 0, f.Zones*f.NodesPerZone)
	wellKnown := f.WellKnownNodeLabels == nil || *f.WellKnownNodeLabels
	for z := 0; z < f.Zones; z++ {
		for i := 1; i <= f.NodesPerZone; i++ {
			n := Node{
				Name:   fmt.Sprintf("node-%s-%d", zoneLetters(z), i),
				Region: f.RegionOf(z), Zone: ZoneName(z),
				WellKnownLabels:        wellKnown,
				Registration:           Registered,
				MaxVolumesPerNode:      f.MaxVolumesPerNode,
				ControllerAttachDetach: f.ControllerAttachDetach,
			}
			if f.Driver.RacksPerZone > 0 {
				n.Rack = RackName((i - 1) % f.Driver.RacksPerZone)
			}
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// DriverTopology is the zonepath driver's topology file for this cluster:
// its regions and zones, and every node with the driver, so that the
// controller can publish to them.
func (c *Cluster) DriverTopology() world.File {
	t := c.Driver.Topology
	f := world.File{MaxVolumesPerNode: c.MaxVolumesPerNode, Keys: t.Keys, Snapshots: t.Snapshots, Volumes: t.Volumes, PreattachedVolumesPerNode: t.PreattachedVolumesPerNode, TerseErrors: t.TerseErrors}
	var racks []string
	for i := range c.Driver.RacksPerZone {
		racks = append(racks, RackName(i))
	}
	for r := 0; r < c.Regions; r++ {
		f.Regions = append(f.Regions, world.Region{Name: RegionName(r)})
	}
	for z := 0; z < c.Zones; z++ {
		r := z % c.Regions
		zone := world.Zone{Name: ZoneName(z), Racks: racks}
		if q, ok := c.SnapshotQuotas[zone.Name]; ok {
			zone.SnapshotQuota = &q
		}
		if c, ok := c.Capacities[zone.Name]; ok {
			zone.Capacity = c.String()
		}
		f.Regions[r].Zones = append(f.Regions[r].Zones, zone)
	}
	for _, n := range c.Nodes {
		if !n.HasDriver() {
			continue
		}
		limit := n.MaxVolumesPerNode
		f.Nodes = append(f.Nodes, world.Node{ID: n.Name, Zone: n.Region + "/" + n.Zone, Rack: n.Rack, MaxVolumesPerNode: &limit, PublishLimit: n.PublishLimit})
	}
	return f
}
