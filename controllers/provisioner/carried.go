package provisioner

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/zonepath/zonepath/controllers/topology"
)

// DriverNodes are the nodes the driver runs on, read as upstream's
// provisioner reads them when it aggregates a requisite: a CSINode listing
// the driver, and the labels of its Node (kubelet writes the segment of
// NodeGetInfo there; a cloud provider adds its well-known keys). Nil
// listers mean the provisioner does not watch nodes: upstream does so only
// for a driver with VOLUME_ACCESSIBILITY_CONSTRAINTS, and for any other it
// sends no topology requirement, so there is nothing to check.
type DriverNodes struct {
	Driver   string
	CSINodes storagelisters.CSINodeLister
	Nodes    corelisters.NodeLister
}

// labels returns the label sets of the driver's nodes; watched is false
// when there are no listers.
func (d DriverNodes) labels() (sets []map[string]string, watched bool, err error) {
	if d.CSINodes == nil || d.Nodes == nil {
		return nil, false, nil
	}
	csiNodes, err := d.CSINodes.List(labels.Everything())
	if err != nil {
		return nil, true, fmt.Errorf("listing CSINodes: %w", err)
	}
	for _, c := range csiNodes {
		if !slices.ContainsFunc(c.Spec.Drivers, func(e storagev1.CSINodeDriver) bool { return e.Name == d.Driver }) {
			continue
		}
		n, err := d.Nodes.Get(c.Name)
		if err != nil {
			continue // a CSINode outlives its Node briefly; no node, no segment
		}
		sets = append(sets, n.Labels)
	}
	return sets, true, nil
}

// placeable keeps the segments of merged, the key-by-key intersection of
// class and affinity, that a volume can really be put in. Merging terms
// with different keys invents combinations: an EBS-style class term
// {vendor zone: c} and a snapshot term {topology.kubernetes.io/zone: a}
// merge into {vendor zone: c, zone: a}, a segment of no node, which the
// driver can only refuse, and only with a message that names neither the
// snapshot nor the class. A segment is kept when
//   - a term of either side names exactly its keys and admits it: the
//     class or the driver wrote that very segment, so it goes out as
//     upstream would send it for any class (even in a zone without nodes
//     yet), or
//   - some node of the driver carries it (all its key=value pairs among
//     the node's labels), which is where the scheduler would look too.
//
// It returns merged itself when every segment is kept, the kept segments
// one term each when some are not, and nil when none is: the caller then
// refuses as for an empty intersection. drivers is the number of nodes
// running the driver, for the caller's message; -1 when no node was read.
func placeable(merged, class, affinity []v1.TopologySelectorTerm, nodes DriverNodes) (kept []v1.TopologySelectorTerm, drivers int, err error) {
	segments, err := topology.Expand(merged)
	if err != nil {
		return nil, -1, err
	}
	var invented []*csi.Topology
	isInvented := make([]bool, len(segments))
	for i, s := range segments {
		if !named(class, s.Segments) && !named(affinity, s.Segments) {
			invented, isInvented[i] = append(invented, s), true
		}
	}
	if len(invented) == 0 {
		return merged, -1, nil
	}
	sets, watched, err := nodes.labels()
	switch {
	case err != nil:
		return nil, -1, err
	case !watched:
		return merged, -1, nil
	}
	carried := carriedBy(sets, invented)
	out := make([]*csi.Topology, 0, len(segments))
	for i, s := range segments {
		if !isInvented[i] || carried[segmentID(s.Segments, keysOf(s.Segments))] {
			out = append(out, s)
		}
	}
	switch len(out) {
	case len(segments):
		return merged, len(sets), nil
	case 0:
		return nil, len(sets), nil
	}
	kept, err = topology.FromCSI(out)
	return kept, len(sets), err
}

// named reports whether some term has exactly seg's keys and admits seg.
func named(terms []v1.TopologySelectorTerm, seg map[string]string) bool {
	return slices.ContainsFunc(terms, func(t v1.TopologySelectorTerm) bool {
		if len(t.MatchLabelExpressions) != len(seg) {
			return false
		}
		for _, e := range t.MatchLabelExpressions {
			if v, ok := seg[e.Key]; !ok || !slices.Contains(e.Values, v) {
				return false
			}
		}
		return true
	})
}

// carriedBy returns the IDs of the segments some label set carries. Nodes
// are projected once per distinct key set, so the work is nodes × key
// sets plus segments, not nodes × segments.
func carriedBy(sets []map[string]string, segments []*csi.Topology) map[string]bool {
	carried := map[string]bool{}
	projected := map[string]bool{}
	for _, s := range segments {
		keys := keysOf(s.Segments)
		keySet := strings.Join(keys, "\x00")
		if projected[keySet] {
			continue
		}
		projected[keySet] = true
		for _, l := range sets {
			if hasAll(l, keys) {
				carried[segmentID(l, keys)] = true
			}
		}
	}
	return carried
}

func keysOf(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func hasAll(l map[string]string, keys []string) bool {
	for _, k := range keys {
		if _, ok := l[k]; !ok {
			return false
		}
	}
	return true
}

// segmentID is m's values at keys (sorted), keys included so that segments
// of different key sets never collide; label keys and values cannot hold
// the separator.
func segmentID(m map[string]string, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('\x00')
		b.WriteString(m[k])
		b.WriteByte('\x00')
	}
	return b.String()
}
