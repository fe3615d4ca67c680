package e2e

import (
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/labels"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// Where a volume or a snapshot is usable is judged against the cluster's
// schedulable nodes, never against a label set made of a segment's own
// keys. CSI spec, CreateVolumeResponse accessible_topology: "COs MAY use
// this information along with the topology information returned by
// NodeGetInfo to ensure that a given volume is accessible from a given
// node". A driver may report more keys than its driver file lists (a
// region beside the zone, a rack) or fewer; its nodeAffinity then names
// keys a segment of the extension file lacks, or lacks keys the segment
// names, and only the nodes say where that is.

// inSegment says whether a node with labels is in seg: its labels carry
// every key and value of seg.
func inSegment(nodeLabels map[string]string, seg driverext.Segment) bool {
	return labels.SelectorFromSet(labels.Set(seg)).Matches(labels.Set(nodeLabels))
}

// admits is a rule a node passes or not, by its labels: a volume's
// nodeAffinity, a snapshot content's nodeAffinity terms.
type admits func(labels map[string]string) bool

func pvAdmits(pv *v1.PersistentVolume) admits {
	return func(labels map[string]string) bool { return pvMatches(pv, labels) }
}

func termsAdmit(ts []v1.TopologySelectorTerm) admits {
	return func(labels map[string]string) bool { return termsMatch(ts, labels) }
}

func inSeg(seg driverext.Segment) admits {
	return func(labels map[string]string) bool { return inSegment(labels, seg) }
}

// admittedBy returns the first of nodes that every rule admits, "" when
// there is none.
func admittedBy(nodes []v1.Node, rules ...admits) string {
	for _, n := range nodes {
		if !slices.ContainsFunc(rules, func(ok admits) bool { return !ok(n.Labels) }) {
			return n.Name
		}
	}
	return ""
}

// admittedIn returns the first of nodes that is in seg and that ok
// admits, "" when ok admits none of seg's nodes: what is judged is
// accessible from seg through that node, or outside seg.
func admittedIn(nodes []v1.Node, seg driverext.Segment, ok admits) string {
	return admittedBy(nodes, inSeg(seg), ok)
}

// admittedBeyond returns the first of nodes that ok admits and one of
// bounds does not, "" when there is none: a volume reaching past the
// topology it was restricted to.
func admittedBeyond(nodes []v1.Node, ok admits, bounds ...admits) string {
	for _, n := range nodes {
		if !ok(n.Labels) {
			continue
		}
		for _, b := range bounds {
			if !b(n.Labels) {
				return n.Name
			}
		}
	}
	return ""
}

// losslessProblem says how term t is not one CSI segment in lossless form
// (one value per key, each key once, every key a topology key of the
// driver), or "". keys are the driver's topology keys: those of the
// driver file and those the driver reports in its CSINode entries, which
// may be more.
func losslessProblem(t v1.TopologySelectorTerm, keys []string) string {
	seen := map[string]bool{}
	for _, r := range t.MatchLabelExpressions {
		switch {
		case !slices.Contains(keys, r.Key):
			return fmt.Sprintf("key %s is not a topology key of the driver (driver file and CSINode: %v)", r.Key, keys)
		case len(r.Values) != 1:
			return fmt.Sprintf("key %s has %d values; a CSI segment has one value per key (lossless conversion)", r.Key, len(r.Values))
		case seen[r.Key]:
			return fmt.Sprintf("key %s repeats", r.Key)
		}
		seen[r.Key] = true
	}
	return ""
}

// insideProblem says how term t is not inside seg, or "": t must admit
// no schedulable node outside seg. A term with more keys than seg (a
// rack) or fewer (a zone without its region) is inside as long as the
// nodes say so. Whether the terms admit a node of seg at all is the
// caller's to check (expectAccessible), for all terms together.
func insideProblem(t v1.TopologySelectorTerm, nodes []v1.Node, seg driverext.Segment) string {
	ts := []v1.TopologySelectorTerm{t}
	for _, n := range nodes {
		if termsMatch(ts, n.Labels) && !inSegment(n.Labels, seg) {
			return fmt.Sprintf("admits node %s, which is not in %s", n.Name, seg)
		}
	}
	return ""
}

// namedSegment is a segment of the extension file with where it stands
// there ("segments[1]", "exhaustion.exhaustedSegment").
type namedSegment struct {
	where string
	seg   driverext.Segment
}

// extSegments lists every segment the extension file names.
func extSegments(f *driverext.File) []namedSegment {
	var out []namedSegment
	for i, s := range f.Segments {
		out = append(out, namedSegment{fmt.Sprintf("segments[%d]", i), s})
	}
	if f.Exhaustion != nil {
		out = append(out, namedSegment{"exhaustion.exhaustedSegment", f.Exhaustion.ExhaustedSegment})
	}
	return out
}

// segmentsProblem checks every segment of the extension file against the
// cluster's schedulable nodes: each needs a node carrying all its keys
// and values. A segment without one is a mistake in the file (a typo, a
// key the nodes do not carry), which would otherwise fail every spec
// that uses it, and is reported once with the topology labels the nodes
// do carry: the values of keys (the driver's topology keys) and of the
// segment's own keys where nodes have them.
func segmentsProblem(nodes []v1.Node, segs []namedSegment, keys []string) error {
	var problems []string
	for _, ns := range segs {
		if admittedIn(nodes, ns.seg, func(map[string]string) bool { return true }) != "" {
			continue
		}
		var absent []string
		for _, k := range slices.Sorted(maps.Keys(ns.seg)) {
			if !slices.ContainsFunc(nodes, func(n v1.Node) bool { _, ok := n.Labels[k]; return ok }) {
				absent = append(absent, k)
			}
		}
		p := fmt.Sprintf("%s %s: no schedulable node is in it", ns.where, ns.seg)
		if len(absent) > 0 {
			p += fmt.Sprintf(" (no schedulable node carries key %s)", strings.Join(absent, ", "))
		}
		problems = append(problems, p)
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s; the schedulable nodes carry %s", strings.Join(problems, "; "), nodeTopology(nodes, segs, keys))
}

// nodeTopology lists, for the keys and the segments' keys, the values the
// nodes carry: key=[v1 v2], keys sorted.
func nodeTopology(nodes []v1.Node, segs []namedSegment, keys []string) string {
	values := map[string][]string{}
	want := slices.Clone(keys)
	for _, ns := range segs {
		want = append(want, slices.Collect(maps.Keys(ns.seg))...)
	}
	for _, n := range nodes {
		for _, k := range want {
			if v, ok := n.Labels[k]; ok && !slices.Contains(values[k], v) {
				values[k] = append(values[k], v)
			}
		}
	}
	if len(values) == 0 {
		return fmt.Sprintf("none of the keys %v", slices.Compact(slices.Sorted(slices.Values(want))))
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(values)) {
		slices.Sort(values[k])
		parts = append(parts, fmt.Sprintf("%s=%v", k, values[k]))
	}
	return strings.Join(parts, ", ")
}

// readyNodes lists the nodes a plain pod can go to: Ready and not
// cordoned.
func readyNodes(ctx context.Context, client kubernetes.Interface) ([]v1.Node, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var out []v1.Node
	for _, n := range nodes.Items {
		if !n.Spec.Unschedulable && slices.ContainsFunc(n.Status.Conditions, func(c v1.NodeCondition) bool {
			return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
		}) {
			out = append(out, n)
		}
	}
	return out, nil
}

// reportedKeys are the driver's topology keys: the driver file's and
// those its node plugins report (CSINode drivers[].topologyKeys, from
// NodeGetInfo's accessible_topology), which may be more.
func reportedKeys(ctx context.Context, client kubernetes.Interface, driver string, fileKeys []string) ([]string, error) {
	keys := slices.Clone(fileKeys)
	csiNodes, err := client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing CSINodes: %w", err)
	}
	for _, cn := range csiNodes.Items {
		for _, d := range cn.Spec.Drivers {
			if d.Name == driver {
				keys = append(keys, d.TopologyKeys...)
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// checkExtSegments is the suite's setup check of the extension file
// against the cluster: every segment it names has a schedulable node.
func checkExtSegments(ctx context.Context, client kubernetes.Interface, driver string, fileKeys []string, f *driverext.File) error {
	nodes, err := readyNodes(ctx, client)
	if err != nil {
		return err
	}
	keys, err := reportedKeys(ctx, client, driver, fileKeys)
	if err != nil {
		return err
	}
	return segmentsProblem(nodes, extSegments(f), keys)
}

// The checks the specs make with the nodes of the cluster.

// expectAccessible checks that ok (what's rule) admits a schedulable node
// of seg, and logs which.
func (e *env) expectAccessible(ctx context.Context, what string, ok admits, seg driverext.Segment) {
	e.expectAdmitted(ctx, what, fmt.Sprintf("%s (its nodes: %v)", seg, namesIn(e.schedulableNodes(ctx), seg)), ok, inSeg(seg))
}

// expectAdmitted checks that a schedulable node passes ok (what's rule)
// and every one of where (said by whereText), and logs which.
func (e *env) expectAdmitted(ctx context.Context, what, whereText string, ok admits, where ...admits) {
	node := admittedBy(e.schedulableNodes(ctx), append([]admits{ok}, where...)...)
	gomega.Expect(node).NotTo(gomega.BeEmpty(), "%s is accessible from no schedulable node of %s", what, whereText)
	framework.Logf("%s is accessible from %s through node %s", what, whereText, node)
}

// disjointSegment is the first segment outside snapshot's content's
// nodeAffinity (segmentOutside), logged; the spec skips when there is
// none, saying so.
func (e *env) disjointSegment(ctx context.Context, snapshot string, content *unstructured.Unstructured) driverext.Segment {
	affinity := nodeAffinity(content)
	seg := segmentOutside(e.schedulableNodes(ctx), e.ext.Segments, termsAdmit(affinity))
	if seg == nil {
		e2eskipper.Skipf("every segment of the extension file has a node in snapshot %s's nodeAffinity %v: list a segment outside it (another region)", snapshot, affinity)
	}
	framework.Logf("snapshot %s nodeAffinity %v; %s is outside it", snapshot, affinity, seg)
	return seg
}

// segmentOutside returns the first of segs none of whose nodes ok
// admits, or nil: a place a snapshot the driver made usable more widely
// than asked (a region for a zone) still excludes.
func segmentOutside(nodes []v1.Node, segs []driverext.Segment, ok admits) driverext.Segment {
	for _, s := range segs {
		if admittedIn(nodes, s, ok) == "" {
			return s
		}
	}
	return nil
}

// expectWithin checks that a volume (what, admitting the nodes ok does)
// meets the requisite it was provisioned for, every one of bound together
// (said by bounds): a schedulable node it admits passes them all. CSI
// TopologyRequirement.requisite: the volume "MUST be accessible from at
// least one of the requisite topologies"; with x > n the SP "MAY choose
// the remaining x-n unique topologies from the list of all possible
// topologies", and CreateVolumeResponse.accessible_topology lists every
// topology it is accessible from. So a volume also accessible beyond the
// requisite (a regional volume's second zone) passes, and says so
// (logBeyond); the check fails only on evidence: no node it admits meets
// the requisite, none of its segments being inside it.
func (e *env) expectWithin(ctx context.Context, what string, ok admits, bounds string, bound ...admits) {
	nodes := e.schedulableNodes(ctx)
	inside, _ := meetsRequisite(nodes, ok, bound...)
	if inside == "" {
		framework.Failf("%s meets no part of %s: it is accessible from none of its schedulable nodes (accessible from %v)", what, bounds, admittedNames(nodes, ok))
	}
	framework.Logf("%s meets %s through node %s", what, bounds, inside)
	e.logBeyond(nodes, what, bounds, ok, bound...)
}

// meetsRequisite judges a volume admitting the nodes ok does against a
// requisite every one of bound together says: inside is a node it admits
// that meets the requisite ("" when none does: the evidence of a volume
// placed outside), beyond a node it admits outside it ("" when none: the
// x > n choice not used).
func meetsRequisite(nodes []v1.Node, ok admits, bound ...admits) (inside, beyond string) {
	return admittedBy(nodes, append([]admits{ok}, bound...)...), admittedBeyond(nodes, ok, bound...)
}

// logBeyond logs a node outside bounds a volume is accessible from: the
// driver's choice under TopologyRequirement x > n, never a failure.
func (e *env) logBeyond(nodes []v1.Node, what, bounds string, ok admits, bound ...admits) {
	if _, node := meetsRequisite(nodes, ok, bound...); node != "" {
		framework.Logf("MAY used: %s is also accessible from node %s, outside %s (TopologyRequirement x > n: the SP \"MAY choose the remaining x-n unique topologies\")", what, node, bounds)
	}
}

// admittedNames lists the nodes ok admits, for messages.
func admittedNames(nodes []v1.Node, ok admits) []string {
	var out []string
	for _, n := range nodes {
		if ok(n.Labels) {
			out = append(out, n.Name)
		}
	}
	return out
}

// driverKeys are the driver's topology keys in the cluster (reportedKeys).
func (e *env) driverKeys(ctx context.Context) []string {
	info := e.driver.GetDriverInfo()
	keys, err := reportedKeys(ctx, e.f.ClientSet, info.Name, info.TopologyKeys)
	framework.ExpectNoError(err)
	return keys
}

func namesIn(nodes []v1.Node, seg driverext.Segment) []string {
	var out []string
	for _, n := range nodes {
		if inSegment(n.Labels, seg) {
			out = append(out, n.Name)
		}
	}
	return out
}

// checkSegmentsInCluster runs checkExtSegments for the suite's extension
// file and driver, before any spec.
func checkSegmentsInCluster() error {
	if ext == nil || extDriver == nil {
		return nil
	}
	client, err := framework.LoadClientset()
	if err != nil {
		return fmt.Errorf("checking the segments against the cluster's nodes: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := checkExtSegments(ctx, client, extDriver.Name, extDriver.TopologyKeys, ext); err != nil {
		return fmt.Errorf("driver %s: %w", extDriver.Name, err)
	}
	return nil
}
