package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"

	"github.com/zonepath/zonepath/e2e/driverext"
	"github.com/zonepath/zonepath/e2e/junit"
)

// KEP-5030's scheduler side, as kube-scheduler's NodeVolumeLimits plugin
// words it.
const (
	exceedMaxVolumeCount = "node(s) exceed max volume count"
	notInstalledSuffix   = "CSI driver is not installed on the node"
)

// preventSchedulingSince is the first release where
// CSIDriver.spec.preventPodSchedulingIfMissing works without an alpha
// gate: VolumeLimitScaling is beta and on by default from v1.37.
var preventSchedulingSince = utilversion.MustParseSemantic("v1.37.0")

// needAttachLimits skips unless the extension file has an attachLimits
// section with the given keys, and returns the section.
func (e *env) needAttachLimits(keys ...string) *driverext.AttachLimits {
	if why := e.ext.AttachLimitsMissing(keys...); why != "" {
		e2eskipper.Skipf("%s", why)
	}
	return e.ext.AttachLimits
}

// needPreventScheduling skips on a server older than
// preventSchedulingSince.
func (e *env) needPreventScheduling() {
	info, err := e.f.ClientSet.Discovery().ServerVersion()
	framework.ExpectNoError(err, "reading the server version")
	why, err := preventSchedulingSkip(info.GitVersion)
	framework.ExpectNoError(err)
	if why != "" {
		e2eskipper.Skipf("%s", why)
	}
}

// preventSchedulingSkip is the skip reason on a server of version
// gitVersion, "" when the server is new enough: the version-gate reason,
// which junitmerge accepts when every run skips these specs (the jobs on
// clusters before v1.37), and no other skip.
func preventSchedulingSkip(gitVersion string) (string, error) {
	v, err := utilversion.ParseSemantic(gitVersion)
	if err != nil {
		return "", fmt.Errorf("parsing the server version %q: %w", gitVersion, err)
	}
	if v.AtLeast(preventSchedulingSince) {
		return "", nil
	}
	return junit.VersionGateReason("v"+preventSchedulingSince.String(), gitVersion,
		"CSIDriver.spec.preventPodSchedulingIfMissing (KEP-5030, gate VolumeLimitScaling) is on by default from it"), nil
}

// setPreventScheduling sets the driver's CSIDriver
// spec.preventPodSchedulingIfMissing and restores it after the spec. The
// field is cluster-wide: specs calling this must be Serial. Call it before
// creating claims: the seconds their provisioning takes let the
// scheduler's informer see the change before any pod exists (nothing in
// the API says when it has).
func (e *env) setPreventScheduling(ctx context.Context, on bool) {
	name := e.driver.GetDriverInfo().Name
	drivers := e.f.ClientSet.StorageV1().CSIDrivers()
	old, err := drivers.Get(ctx, name, metav1.GetOptions{})
	framework.ExpectNoError(err, "reading CSIDriver %s: the KEP-5030 specs need the driver's CSIDriver object", name)
	patch := func(ctx context.Context, value *bool) *storagev1.CSIDriver {
		data, err := json.Marshal(map[string]any{"spec": map[string]any{"preventPodSchedulingIfMissing": value}})
		framework.ExpectNoError(err)
		got, err := drivers.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
		framework.ExpectNoError(err, "setting CSIDriver %s spec.preventPodSchedulingIfMissing to %v", name, ptrString(value))
		return got
	}
	ginkgo.DeferCleanup(func(ctx context.Context) { patch(ctx, old.Spec.PreventPodSchedulingIfMissing) })
	got := patch(ctx, &on)
	if p := got.Spec.PreventPodSchedulingIfMissing; p == nil || *p != on {
		framework.Failf("CSIDriver %s spec.preventPodSchedulingIfMissing is %s after setting it to %v: the API server drops the field (gate VolumeLimitScaling off?)", name, ptrString(p), on)
	}
}

func ptrString(b *bool) string {
	if b == nil {
		return "<unset>"
	}
	return fmt.Sprint(*b)
}

// driverEntry is node's CSINode entry for the driver: csiNode says whether
// the node has a CSINode at all.
func (e *env) driverEntry(ctx context.Context, node string) (entry *storagev1.CSINodeDriver, csiNode bool) {
	cn, err := e.f.ClientSet.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	framework.ExpectNoError(err, "reading CSINode %s", node)
	for i, d := range cn.Spec.Drivers {
		if d.Name == e.driver.GetDriverInfo().Name {
			return &cn.Spec.Drivers[i], true
		}
	}
	return nil, true
}

// expectRegistered checks the node's CSINode entry for the driver, which
// only the node plugin's registration with kubelet creates: the driver's
// name, the node ID kubelet got from NodeGetInfo, and every topology key
// the driver declares.
func (e *env) expectRegistered(ctx context.Context, node string) {
	entry, csiNode := e.driverEntry(ctx, node)
	gomega.Expect(csiNode).To(gomega.BeTrueBecause("node %s has a CSINode", node))
	gomega.Expect(entry).NotTo(gomega.BeNil(), "CSINode %s lists driver %s", node, e.driver.GetDriverInfo().Name)
	gomega.Expect(entry.NodeID).NotTo(gomega.BeEmpty(), "CSINode %s's entry for %s has the node ID from NodeGetInfo", node, entry.Name)
	for _, k := range e.driver.GetDriverInfo().TopologyKeys {
		gomega.Expect(slices.Contains(entry.TopologyKeys, k)).To(gomega.BeTrueBecause("CSINode %s's entry for %s lists topology key %s: %v", node, entry.Name, k, entry.TopologyKeys))
	}
}

// onNode is a node selector for exactly node, by its hostname label.
func onNode(node *v1.Node) map[string]string {
	host, ok := node.Labels[v1.LabelHostname]
	if !ok {
		e2eskipper.Skipf("node %s has no %s label to pin a pod to it", node.Name, v1.LabelHostname)
	}
	return map[string]string{v1.LabelHostname: host}
}

// nodeSegment is the node's segment: its labels for the driver's
// topology keys.
func (e *env) nodeSegment(node *v1.Node) driverext.Segment {
	seg := driverext.Segment{}
	for _, k := range e.driver.GetDriverInfo().TopologyKeys {
		v, ok := node.Labels[k]
		if !ok {
			e2eskipper.Skipf("node %s has no label %s (one of DriverInfo.TopologyKeys): no claim can be provisioned where it is usable there", node.Name, k)
		}
		seg[k] = v
	}
	return seg
}

// boundClaims makes n claims (Immediate) usable on node, waits for them to
// be bound and returns their names.
func (e *env) boundClaims(ctx context.Context, prefix string, node *v1.Node, n int) []string {
	var allowed []v1.TopologySelectorTerm
	if seg := e.nodeSegment(node); len(seg) > 0 {
		allowed = terms(seg)
	}
	sc := e.storageClass(ctx, storagev1.VolumeBindingImmediate, allowed)
	claims := make([]string, n)
	for i := range claims {
		claims[i] = claimName(prefix, i)
		e.pvc(ctx, claims[i], sc, nil)
	}
	for _, c := range claims {
		e.expectNoTopologyAsDeclared(e.waitBound(ctx, c))
	}
	return claims
}

// expectNoTopologyAsDeclared fails when the extension file says the
// driver lacks VOLUME_ACCESSIBILITY_CONSTRAINTS but the volume carries a
// nodeAffinity, which the provisioner writes only from the driver's
// accessible_topology (csi.proto Volume.accessible_topology: "A plugin
// that returns this field MUST also set the
// VOLUME_ACCESSIBILITY_CONSTRAINTS plugin capability").
func (e *env) expectNoTopologyAsDeclared(pv *v1.PersistentVolume) {
	if e.ext.HasVolumeTopology() || pv.Spec.NodeAffinity == nil {
		return
	}
	framework.Failf("volume %s has nodeAffinity %s, but the extension file says volumeTopology: false: the driver returned accessible_topology, which it MUST NOT without VOLUME_ACCESSIBILITY_CONSTRAINTS, or the file is wrong", pv.Name, pvAffinity(pv))
}

// node reads a node the extension file names.
func (e *env) node(ctx context.Context, key, name string) *v1.Node {
	n, err := e.f.ClientSet.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	framework.ExpectNoError(err, "reading node %s (attachLimits.%s)", name, key)
	return n
}

// idleDriverNode waits for a schedulable node with the driver registered,
// none of the extension file's special nodes, and no pod with a claim on
// it (leftovers of earlier specs count against its limit until they are
// gone).
func (e *env) idleDriverNode(ctx context.Context) *v1.Node {
	a := e.ext.AttachLimits
	special := []string{a.NodeWithoutCSINode, a.NodeWithoutDriver, a.LateNode}
	var idle *v1.Node
	gomega.Eventually(ctx, func(ctx context.Context) error {
		var busy []string
		for _, n := range e.schedulableNodes(ctx) {
			if entry, _ := e.driverEntry(ctx, n.Name); entry == nil || slices.Contains(special, n.Name) {
				continue
			}
			if users := e.claimUsers(ctx, n.Name); len(users) > 0 {
				busy = append(busy, fmt.Sprintf("%s: %s", n.Name, strings.Join(users, ", ")))
				continue
			}
			idle = &n
			return nil
		}
		return fmt.Errorf("no schedulable node with the driver registered and no pod holding a claim; busy: %v", busy)
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	return idle
}

// claimUsers lists the pods on node that hold claims.
func (e *env) claimUsers(ctx context.Context, node string) []string {
	pods, err := e.f.ClientSet.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	framework.ExpectNoError(err, "listing pods on node %s", node)
	var out []string
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
				out = append(out, p.Namespace+"/"+p.Name)
				break
			}
		}
	}
	return out
}

// failedSchedulingSaying matches a FailedScheduling event whose message
// contains text.
func failedSchedulingSaying(text string) func(v1.Event) bool {
	return func(ev v1.Event) bool { return ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, text) }
}

// expectPendingBecause waits for the pod's FailedScheduling event saying
// text and checks the pod has no node.
func (e *env) expectPendingBecause(ctx context.Context, pod, text string) {
	ev := e.waitEvent(ctx, pod, "FailedScheduling saying "+text, failedSchedulingSaying(text))
	framework.Logf("pod %s: %s", pod, ev.Message)
	e.expectUnscheduled(ctx, pod)
}

// expectScheduledOn waits for the pod to be bound to node.
func (e *env) expectScheduledOn(ctx context.Context, pod string, node *v1.Node) {
	got := e.waitScheduled(ctx, pod, e.timeout())
	gomega.Expect(got.Name).To(gomega.Equal(node.Name), "pod %s pinned to node %s was bound to %s", pod, node.Name, got.Name)
}

// waitRegistered waits until node's CSINode has (or has not) the driver.
func (e *env) waitRegistered(ctx context.Context, node string, want bool) {
	gomega.Eventually(ctx, func(ctx context.Context) bool {
		entry, _ := e.driverEntry(ctx, node)
		return (entry != nil) == want
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.BeTrueBecause("node %s's CSINode has an entry for %s: %v", node, e.driver.GetDriverInfo().Name, want))
}

// missingDriverCase is a node where the driver is not installed, as the
// extension file names it.
type missingDriverCase struct {
	letterOn, letterOff string
	key, what           string
	// check fails unless the node is what key says it is.
	check func(e *env, ctx context.Context, node string)
}

var missingDriverCases = []missingDriverCase{
	{letterOn: "c", letterOff: "e", key: "nodeWithoutCSINode", what: "a node without a CSINode",
		check: func(e *env, ctx context.Context, node string) {
			if _, csiNode := e.driverEntry(ctx, node); csiNode {
				framework.Failf("node %s has a CSINode, but attachLimits.nodeWithoutCSINode says it has none", node)
			}
		}},
	{letterOn: "d", letterOff: "f", key: "nodeWithoutDriver", what: "a node whose CSINode lacks the driver",
		check: func(e *env, ctx context.Context, node string) {
			entry, csiNode := e.driverEntry(ctx, node)
			if !csiNode || entry != nil {
				framework.Failf("node %s: CSINode present %v, driver entry present %v; attachLimits.nodeWithoutDriver needs a CSINode without the driver", node, csiNode, entry != nil)
			}
		}},
}

// value is the case's node name in the extension file.
func (c missingDriverCase) value(a *driverext.AttachLimits) string {
	if c.key == "nodeWithoutCSINode" {
		return a.NodeWithoutCSINode
	}
	return a.NodeWithoutDriver
}

func defineAttachLimits(e *env) {
	label := ginkgo.Label(labelAttachLimits)

	// kubelet publishes each node plugin's NodeGetInfo max_volumes_per_node
	// as that node's CSINode allocatable.count (KEP-5030 reads it there);
	// drivers compute it per node (csi.proto NodeGetInfoResponse: "Maximum
	// number of volumes that controller can publish to the node"), so the
	// extension file gives a default and the nodes whose limit differs.
	ginkgo.It("scenario 15a: publishes the driver's attach limit as CSINode allocatable.count on every node with the driver, each node's own", label, func(ctx context.Context) {
		a := e.needAttachLimits()
		csiNodes, err := e.f.ClientSet.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
		framework.ExpectNoError(err)
		seen := map[string]int32{}
		for _, cn := range csiNodes.Items {
			entry, _ := e.driverEntry(ctx, cn.Name)
			if entry == nil {
				continue
			}
			want := a.LimitOf(cn.Name)
			if entry.Allocatable == nil || entry.Allocatable.Count == nil {
				framework.Failf("CSINode %s: the %s entry has no allocatable.count; want the driver's limit %d (attachLimits)", cn.Name, entry.Name, want)
			}
			gomega.Expect(*entry.Allocatable.Count).To(gomega.Equal(want), "CSINode %s: allocatable.count of %s, want attachLimits' limit of the node", cn.Name, entry.Name)
			seen[cn.Name] = *entry.Allocatable.Count
		}
		gomega.Expect(seen).NotTo(gomega.BeEmpty(), "no CSINode has an entry for %s", e.driver.GetDriverInfo().Name)
		// A misspelt node would leave its limit untested; one not
		// registered now (attachLimits.lateNode) is checked once it is.
		for node := range a.NodeLimits {
			_, err := e.f.ClientSet.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			framework.ExpectNoError(err, "reading node %s of attachLimits.nodeLimits", node)
		}
		framework.Logf("allocatable.count by node: %v", seen)
	})

	ginkgo.It(`scenario 15b: keeps the pod beyond a node's attach limit Pending with the scheduler's "exceed max volume count", until a slot frees`, label, ginkgo.Serial, func(ctx context.Context) {
		a := e.needAttachLimits()
		node := e.idleDriverNode(ctx)
		limit := int(a.LimitOf(node.Name))
		framework.Logf("node %s: attach limit %d", node.Name, limit)
		claims := e.boundClaims(ctx, "claim", node, limit+1)
		e.pod(ctx, "full", onNode(node), claims[:limit]...)
		e.expectScheduledOn(ctx, "full", node)
		e.pod(ctx, "beyond", onNode(node), claims[limit])
		e.expectPendingBecause(ctx, "beyond", exceedMaxVolumeCount)
		// The limit, nothing else, held it back: with the full pod gone
		// it fits (requeued on the pod's deletion).
		framework.ExpectNoError(e.f.ClientSet.CoreV1().Pods(e.ns()).Delete(ctx, "full", metav1.DeleteOptions{}))
		e.expectScheduledOn(ctx, "beyond", node)
	})

	for _, c := range missingDriverCases {
		ginkgo.It(fmt.Sprintf("scenario 15%s: with CSIDriver.spec.preventPodSchedulingIfMissing, does not use %s; the event says the driver is not installed", c.letterOn, c.what), label, ginkgo.Serial, func(ctx context.Context) {
			node := e.missingDriverNode(ctx, c)
			e.setPreventScheduling(ctx, true)
			claims := e.boundClaims(ctx, "claim", node, 1)
			e.pod(ctx, "pinned", onNode(node), claims...)
			e.expectPendingBecause(ctx, "pinned", e.driver.GetDriverInfo().Name+" "+notInstalledSuffix)
		})

		ginkgo.It(fmt.Sprintf("scenario 15%s: without preventPodSchedulingIfMissing, uses %s", c.letterOff, c.what), label, ginkgo.Serial, func(ctx context.Context) {
			node := e.missingDriverNode(ctx, c)
			e.setPreventScheduling(ctx, false)
			claims := e.boundClaims(ctx, "claim", node, 1)
			e.pod(ctx, "pinned", onNode(node), claims...)
			e.expectScheduledOn(ctx, "pinned", node)
		})
	}

	ginkgo.It("scenario 15g: with preventPodSchedulingIfMissing, a late registration of the driver lets the pending pod schedule", label, ginkgo.Serial, func(ctx context.Context) {
		e.needNodeWithoutDriver()
		a := e.needAttachLimits("lateNode", "registerCommand", "unregisterCommand")
		e.needPreventScheduling()
		node := e.node(ctx, "lateNode", a.LateNode)
		e.unregisterLate(ctx)
		ginkgo.DeferCleanup(e.unregisterLate)
		e.setPreventScheduling(ctx, true)
		claims := e.boundClaims(ctx, "claim", node, 1)
		e.pod(ctx, "pinned", onNode(node), claims...)
		e.expectPendingBecause(ctx, "pinned", e.driver.GetDriverInfo().Name+" "+notInstalledSuffix)
		runCommand(ctx, "attachLimits.registerCommand", a.RegisterCommand)
		e.waitRegistered(ctx, node.Name, true)
		// The CSINode update that adds the driver with its allocatable
		// count requeues the pod; the scheduler's 5-minute flush of
		// unschedulable pods would be too late.
		got := e.waitScheduled(ctx, "pinned", requeueBound)
		gomega.Expect(got.Name).To(gomega.Equal(node.Name), "pod pinned to %s was bound to %s", node.Name, got.Name)
	})
}

// missingDriverNode skips unless the case's node and the server version
// are there, and checks the node is what the extension file says.
func (e *env) missingDriverNode(ctx context.Context, c missingDriverCase) *v1.Node {
	e.needNodeWithoutDriver()
	e.needAttachLimits(c.key)
	e.needPreventScheduling()
	name := c.value(e.ext.AttachLimits)
	c.check(e, ctx, name)
	return e.node(ctx, c.key, name)
}

// needNodeWithoutDriver skips the specs that provision a volume for a
// node the driver is not (yet) installed on when the driver is
// node-local: its volumes live on the node that holds them, so the reason
// is the driver's shape, not a key missing from the extension file.
func (e *env) needNodeWithoutDriver() {
	if why := e.ext.NodeLocalMissing(); why != "" {
		e2eskipper.Skipf("%s", why)
	}
}

// unregisterLate leaves lateNode without the driver, running
// unregisterCommand when it is registered there.
func (e *env) unregisterLate(ctx context.Context) {
	a := e.ext.AttachLimits
	if entry, _ := e.driverEntry(ctx, a.LateNode); entry == nil {
		return
	}
	runCommand(ctx, "attachLimits.unregisterCommand", a.UnregisterCommand)
	e.waitRegistered(ctx, a.LateNode, false)
}
