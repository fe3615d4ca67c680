package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/storage/names"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"
	imageutils "k8s.io/kubernetes/test/utils/image"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// The snapshot API's resources, read as unstructured: the KEP-5943 fields
// (VolumeSnapshotContent spec.nodeAffinity, VolumeSnapshotClass
// allowedTopologies) are not in the typed clients yet, and decoding into
// their structs would drop them.
var (
	snapshotGroup          = "snapshot.storage.k8s.io"
	volumeSnapshots        = schema.GroupVersionResource{Group: snapshotGroup, Version: "v1", Resource: "volumesnapshots"}
	volumeSnapshotContents = schema.GroupVersionResource{Group: snapshotGroup, Version: "v1", Resource: "volumesnapshotcontents"}
	volumeSnapshotClasses  = schema.GroupVersionResource{Group: snapshotGroup, Version: "v1", Resource: "volumesnapshotclasses"}
)

// Timeouts of single waits. Fake zones answer in seconds; a real cluster
// with real attach may need the framework's longer ones.
const (
	poll = 200 * time.Millisecond
	// requeueBound is how soon a pending pod must schedule after the
	// snapshot's topology widens: far below kube-scheduler's 5-minute
	// flush of unschedulable pods, so only a requeue on the event passes.
	requeueBound = 30 * time.Second
)

// env is what every spec works with: the framework (a namespace per spec),
// the driver upstream's loader read, and the extension file.
type env struct {
	f      *framework.Framework
	driver storageframework.TestDriver
	cfg    *storageframework.PerTestConfig
	ext    *driverext.File
}

func (e *env) ns() string { return e.f.Namespace.Name }

// timeout bounds a wait for provisioning or scheduling: the driver file's
// ClaimProvision.
func (e *env) timeout() time.Duration { return e.f.Timeouts.ClaimProvision }

// snapshotTimeout bounds a wait for a VolumeSnapshot or a group snapshot
// to be ready to use: the driver file's SnapshotCreate (5m by default), as
// Kubernetes' own snapshot suites wait. A snapshot that uploads (EBS, PD,
// Azure Disk) reports ready_to_use false for minutes after the cut while
// the sidecar reissues CreateSnapshot (spec.md CreateSnapshot: "CO SHOULD
// then reissue the same CreateSnapshotRequest periodically until boolean
// ready_to_use flips to true"); ClaimProvision says nothing about that.
func (e *env) snapshotTimeout() time.Duration { return e.f.Timeouts.SnapshotCreate }

// needSnapshotTopology skips unless the driver and the cluster declare
// snapshot topology end to end.
func (e *env) needSnapshotTopology() {
	if why := e.ext.SnapshotTopologyMissing(); why != "" {
		e2eskipper.Skipf("%s", why)
	}
}

// needSegments skips unless the driver has volume topology and the
// extension file lists at least n segments.
func (e *env) needSegments(n int) {
	if why := e.ext.SegmentsMissing(n); why != "" {
		e2eskipper.Skipf("%s", why)
	}
}

// segment is segments[i] of the extension file; the spec skips when the
// file has no such segment (needSegments).
func (e *env) segment(i int) driverext.Segment {
	e.needSegments(i + 1)
	return e.ext.Segments[i]
}

// terms turns segments into topology selector terms, one term per segment
// and one value per key: the lossless form.
func terms(segs ...driverext.Segment) []v1.TopologySelectorTerm {
	out := make([]v1.TopologySelectorTerm, 0, len(segs))
	for _, s := range segs {
		var t v1.TopologySelectorTerm
		for _, k := range sortedKeys(s) {
			t.MatchLabelExpressions = append(t.MatchLabelExpressions, v1.TopologySelectorLabelRequirement{Key: k, Values: []string{s[k]}})
		}
		out = append(out, t)
	}
	return out
}

// crossTerm is one term that lists, for every key of segs, all the
// values segs give it: the segments and their cross product.
func crossTerm(segs []driverext.Segment) []v1.TopologySelectorTerm {
	values := map[string][]string{}
	for _, s := range segs {
		for k, v := range s {
			if !slices.Contains(values[k], v) {
				values[k] = append(values[k], v)
			}
		}
	}
	var t v1.TopologySelectorTerm
	for _, k := range sortedKeys(values) {
		slices.Sort(values[k])
		t.MatchLabelExpressions = append(t.MatchLabelExpressions, v1.TopologySelectorLabelRequirement{Key: k, Values: values[k]})
	}
	return []v1.TopologySelectorTerm{t}
}

// termsMatch says whether labels satisfy at least one term (OR across
// terms, AND within one). No terms restrict nothing.
func termsMatch(ts []v1.TopologySelectorTerm, labels map[string]string) bool {
	if len(ts) == 0 {
		return true
	}
	for _, t := range ts {
		ok := true
		for _, r := range t.MatchLabelExpressions {
			v, has := labels[r.Key]
			if !has || !slices.Contains(r.Values, v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// pvMatches says whether a node with labels can use pv.
func pvMatches(pv *v1.PersistentVolume, labels map[string]string) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	ok, err := corev1helpers.MatchNodeSelectorTerms(&v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}, pv.Spec.NodeAffinity.Required)
	return err == nil && ok
}

func pvAffinity(pv *v1.PersistentVolume) string {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return "<none>"
	}
	return fmt.Sprint(pv.Spec.NodeAffinity.Required.NodeSelectorTerms)
}

// nodeAffinity reads a VolumeSnapshotContent's spec.nodeAffinity: nil when
// absent.
func nodeAffinity(content *unstructured.Unstructured) []v1.TopologySelectorTerm {
	raw, found, err := unstructured.NestedSlice(content.Object, "spec", "nodeAffinity")
	framework.ExpectNoError(err, "VolumeSnapshotContent %s spec.nodeAffinity", content.GetName())
	if !found {
		return nil
	}
	data, err := json.Marshal(raw)
	framework.ExpectNoError(err)
	var out []v1.TopologySelectorTerm
	framework.ExpectNoError(json.Unmarshal(data, &out), "VolumeSnapshotContent %s spec.nodeAffinity is not a list of topology selector terms", content.GetName())
	return out
}

func toUnstructured(ts []v1.TopologySelectorTerm) []any {
	data, err := json.Marshal(ts)
	framework.ExpectNoError(err)
	var out []any
	framework.ExpectNoError(json.Unmarshal(data, &out))
	return out
}

// storageClass creates a StorageClass from the driver's (its provisioner
// and parameters) with the given binding mode and allowedTopologies,
// under a unique name, deleted after the spec.
func (e *env) storageClass(ctx context.Context, mode storagev1.VolumeBindingMode, allowed []v1.TopologySelectorTerm) string {
	sc := e.driver.(storageframework.DynamicPVTestDriver).GetDynamicProvisionStorageClass(ctx, e.cfg, "")
	sc.ObjectMeta = metav1.ObjectMeta{Name: names.SimpleNameGenerator.GenerateName(e.ns() + "-")}
	sc.VolumeBindingMode = ptr.To(mode)
	sc.AllowedTopologies = allowed
	sc.ReclaimPolicy = ptr.To(v1.PersistentVolumeReclaimDelete)
	_, err := e.f.ClientSet.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating StorageClass %s", sc.Name)
	ginkgo.DeferCleanup(framework.IgnoreNotFound(e.f.ClientSet.StorageV1().StorageClasses().Delete), sc.Name, metav1.DeleteOptions{})
	if mode == storagev1.VolumeBindingWaitForFirstConsumer {
		e.waitCapacityPublished(ctx, sc.Name)
	}
	return sc.Name
}

// snapshotClass creates a VolumeSnapshotClass from the driver's with
// extra parameters and allowedTopologies, under a unique name, deleted
// after the spec.
func (e *env) snapshotClass(ctx context.Context, params map[string]string, allowed []v1.TopologySelectorTerm) string {
	p := map[string]string{}
	for k, v := range params {
		p[k] = v
	}
	vsc := e.driver.(storageframework.SnapshottableTestDriver).GetSnapshotClass(ctx, e.cfg, p)
	vsc.SetName(names.SimpleNameGenerator.GenerateName(e.ns() + "-"))
	if len(allowed) > 0 {
		vsc.Object["allowedTopologies"] = toUnstructured(allowed)
	}
	client := e.f.DynamicClient.Resource(volumeSnapshotClasses)
	_, err := client.Create(ctx, vsc, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating VolumeSnapshotClass %s", vsc.GetName())
	ginkgo.DeferCleanup(framework.IgnoreNotFound(client.Delete), vsc.GetName(), metav1.DeleteOptions{})
	if len(allowed) > 0 {
		// Without the field in the CRD's schema the API server prunes it
		// silently, and every topology spec would test nothing.
		got, err := client.Get(ctx, vsc.GetName(), metav1.GetOptions{})
		framework.ExpectNoError(err)
		_, found, _ := unstructured.NestedSlice(got.Object, "allowedTopologies")
		gomega.Expect(found).To(gomega.BeTrueBecause("the VolumeSnapshotClass CRD keeps allowedTopologies (KEP-5943 schema); it was pruned"))
	}
	return vsc.GetName()
}

func snapshotSource(name string) *v1.TypedLocalObjectReference {
	return &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotGroup), Kind: "VolumeSnapshot", Name: name}
}

// pvc creates a claim of the driver's minimum size.
func (e *env) pvc(ctx context.Context, name, class string, source *v1.TypedLocalObjectReference) {
	claim := e.newClaim(name, class)
	claim.Spec.DataSource = source
	e.createClaim(ctx, claim)
}

// newClaim is a ReadWriteOnce claim of the driver's minimum size.
func (e *env) newClaim(name, class string) *v1.PersistentVolumeClaim {
	size := e.driver.GetDriverInfo().SupportedSizeRange.Min
	if size == "" {
		size = "1Gi"
	}
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func (e *env) createClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) {
	_, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Create(ctx, claim, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating PVC %s", claim.Name)
}

// waitBound waits for a claim to be bound and returns its volume. On
// timeout the failure carries the claim's evidence (claimFacts): the
// driver's code from the provisioner's events, the node chosen, the
// source snapshot's content error.
func (e *env) waitBound(ctx context.Context, name string) *v1.PersistentVolume {
	var pv *v1.PersistentVolume
	bound := pollUntil(ctx, e.timeout(), func(ctx context.Context) (bool, error) {
		claim, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, name, metav1.GetOptions{})
		if err != nil || claim.Status.Phase != v1.ClaimBound {
			return false, err
		}
		pv, err = e.f.ClientSet.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, err
	})
	if !bound {
		c := e.claimFacts(ctx, name)
		framework.Failf("PVC %s is not bound after %v:%s\n  points at: %s", name, e.timeout(), c, orNothing(c.blame()))
	}
	return pv
}

// orNothing is why, or a plain "nothing recorded a reason".
func orNothing(why string) string {
	if why == "" {
		return "nothing recorded a reason (no Warning on the claim, no content error)"
	}
	return why
}

// lastEvent describes the newest event of an object, for failure messages.
func (e *env) lastEvent(ctx context.Context, object string) string {
	events, err := e.f.ClientSet.CoreV1().Events(e.ns()).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
	if err != nil || len(events.Items) == 0 {
		return ""
	}
	last := events.Items[0]
	for _, ev := range events.Items[1:] {
		if ev.LastTimestamp.After(last.LastTimestamp.Time) {
			last = ev
		}
	}
	return fmt.Sprintf("; last event %s %s: %s", last.Type, last.Reason, last.Message)
}

// notYetSeen is a Warning from a component whose informer had not yet
// caught up with a claim or StorageClass the spec created just before:
// the scheduler's FailedScheduling 'persistentvolumeclaim "x" not found',
// the provisioner's ProvisioningFailed 'storageclass... "x" not found'. A
// retry, but not a choice of node.
func notYetSeen(ev v1.Event) bool {
	if !strings.Contains(ev.Message, "not found") {
		return false
	}
	return (ev.Reason == "FailedScheduling" && strings.Contains(ev.Message, "persistentvolumeclaim ")) ||
		(ev.Reason == "ProvisioningFailed" && strings.Contains(ev.Message, "storageclass.storage.k8s.io "))
}

// snapshot creates a VolumeSnapshot of a claim and returns its content
// once the snapshot is ready to use.
func (e *env) snapshot(ctx context.Context, name, claim, class string) *unstructured.Unstructured {
	e.createSnapshot(ctx, name, claim, class)
	return e.waitSnapshotReady(ctx, name, e.snapshotTimeout())
}

// createSnapshot creates a VolumeSnapshot of a claim.
func (e *env) createSnapshot(ctx context.Context, name, claim, class string) {
	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotGroup + "/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"volumeSnapshotClassName": class, "source": map[string]any{"persistentVolumeClaimName": claim}},
	}}
	_, err := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()).Create(ctx, vs, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating VolumeSnapshot %s", name)
}

// waitSnapshotReady waits until a VolumeSnapshot is ready to use and
// returns its content.
func (e *env) waitSnapshotReady(ctx context.Context, name string, timeout time.Duration) *unstructured.Unstructured {
	snaps := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns())
	var content *unstructured.Unstructured
	gomega.Eventually(ctx, func(ctx context.Context) error {
		got, err := snaps.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready, _, _ := unstructured.NestedBool(got.Object, "status", "readyToUse")
		bound, _, _ := unstructured.NestedString(got.Object, "status", "boundVolumeSnapshotContentName")
		if !ready || bound == "" {
			msg, _, _ := unstructured.NestedString(got.Object, "status", "error", "message")
			return fmt.Errorf("VolumeSnapshot %s not ready (content %q, error %q)%s", name, bound, msg, e.lastEvent(ctx, name))
		}
		content, err = e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, bound, metav1.GetOptions{})
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
	return content
}

// sourceSnapshot makes a volume in seg (Immediate, allowedTopologies seg)
// and a snapshot of it through a class with the given parameters and
// allowedTopologies, and returns the snapshot's content. No parameters
// are the extension file's restrictedSnapshotClassParameters: a snapshot
// restricted to where it is cut, which the driver's default may not be.
func (e *env) sourceSnapshot(ctx context.Context, name string, seg driverext.Segment, params map[string]string, allowed []v1.TopologySelectorTerm) *unstructured.Unstructured {
	if params == nil {
		params = e.ext.RestrictedSnapshotClassParameters
	}
	sc := e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(seg))
	e.pvc(ctx, name+"-source", sc, nil)
	pv := e.waitBound(ctx, name+"-source")
	e.expectAccessible(ctx, fmt.Sprintf("source volume %s (%s)", pv.Name, pvAffinity(pv)), pvAdmits(pv), seg)
	return e.snapshot(ctx, name, name+"-source", e.snapshotClass(ctx, params, allowed))
}

// patchAffinity sets a content's nodeAffinity as an admin would: the
// field is mutable for exactly this.
func (e *env) patchAffinity(ctx context.Context, content string, ts []v1.TopologySelectorTerm) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"nodeAffinity": ts}})
	framework.ExpectNoError(err)
	_, err = e.f.DynamicClient.Resource(volumeSnapshotContents).Patch(ctx, content, types.MergePatchType, patch, metav1.PatchOptions{})
	framework.ExpectNoError(err, "patching VolumeSnapshotContent %s nodeAffinity", content)
}

// pod creates a pod holding the claims, restricted by selector.
func (e *env) pod(ctx context.Context, name string, selector map[string]string, claims ...string) {
	e.createPod(ctx, newPod(name, selector, claims...))
}

// newPod is a pod of one pause container holding claims as volumes v0,
// v1, ..., restricted by selector, and gone at once when deleted.
func newPod(name string, selector map[string]string, claims ...string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			NodeSelector:                  selector,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []v1.Container{{Name: "c", Image: imageutils.GetPauseImageName()}},
		},
	}
	for i, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: fmt.Sprintf("v%d", i), VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return pod
}

// createPod creates pod once the controllers know its claims.
func (e *env) createPod(ctx context.Context, pod *v1.Pod) {
	var claims []string
	for _, v := range pod.Spec.Volumes {
		claims = append(claims, v.PersistentVolumeClaim.ClaimName)
	}
	e.waitClaimsKnown(ctx, claims...)
	_, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Create(ctx, pod, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating pod %s", pod.Name)
}

// ran is what a pod of runPod left: its node and its termination message.
type ran struct{ node, message string }

// runPod runs script in a busybox container with claim mounted at /data
// until it exits, and returns what it printed: the script's standard
// output goes to the container's termination message, which the API
// server has without a kubelet log proxy (its standard error stays in the
// logs).
func (e *env) runPod(ctx context.Context, name string, selector map[string]string, claim, script string) ran {
	pod := scriptPod(name, selector, claim, script)
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: pod.Spec.Volumes[0].Name, MountPath: "/data"}}
	return e.runToEnd(ctx, pod)
}

// scriptPod is runPod's pod without the claim's place in the container:
// script in a busybox container, run once, its output the termination
// message.
func scriptPod(name string, selector map[string]string, claim, script string) *v1.Pod {
	pod := newPod(name, selector, claim)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.Containers = []v1.Container{{
		Name: "c", Image: imageutils.GetE2EImage(imageutils.BusyBox),
		Command:                  []string{"sh", "-c", "exec >/dev/termination-log\n" + script},
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
	}}
	return pod
}

// runToEnd creates pod and waits until it has run to its end.
func (e *env) runToEnd(ctx context.Context, pod *v1.Pod) ran {
	name := pod.Name
	e.createPod(ctx, pod)
	var out ran
	gomega.Eventually(ctx, func(ctx context.Context) error {
		got, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		switch got.Status.Phase {
		case v1.PodSucceeded:
			out = ran{node: got.Spec.NodeName, message: terminationMessage(got)}
			return nil
		case v1.PodFailed:
			return gomega.StopTrying(fmt.Sprintf("pod %s failed on %s: %q", name, got.Spec.NodeName, terminationMessage(got)))
		}
		return fmt.Errorf("pod %s is %s on %q%s", name, got.Status.Phase, got.Spec.NodeName, e.lastEvent(ctx, name))
	}).WithTimeout(e.f.Timeouts.PodStart).WithPolling(poll).Should(gomega.Succeed())
	return out
}

// terminationMessage is the first container's message, without the
// trailing newline of echo.
func terminationMessage(pod *v1.Pod) string {
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return strings.TrimRight(t.Message, "\r\n")
		}
	}
	return ""
}

// waitClaimsKnown waits until kube-controller-manager's PV controller has
// reported each claim (it reports every claim it syncs: WaitForFirstConsumer,
// ExternalProvisioning, ...). A pod created before that can reach a
// scheduler whose claim informer still lags, which rejects it with
// "persistentvolumeclaim not found" and, under load, was seen to leave it
// unscheduled for minutes. A claim bound in advance to its volume
// (spec.volumeName) is bound without an event; its Bound phase, which the
// PV controller writes, says the same.
func (e *env) waitClaimsKnown(ctx context.Context, claims ...string) {
	for _, c := range claims {
		gomega.Eventually(ctx, func(ctx context.Context) error {
			claim, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, c, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if claim.Status.Phase == v1.ClaimBound {
				return nil
			}
			events, err := e.f.ClientSet.CoreV1().Events(e.ns()).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + c})
			if err != nil {
				return err
			}
			if len(events.Items) == 0 {
				return fmt.Errorf("claim %s is %s and has no event from the PV controller yet (the claim is not known to the controllers)", c, claim.Status.Phase)
			}
			return nil
		}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	}
}

// restoreInside restores a snapshot into a new claim of class for a new,
// unpinned pod, and checks that the scheduler placed the pod inside the
// snapshot's nodeAffinity, that the volume is accessible from its node,
// and that both happened the first time. It returns the node.
func (e *env) restoreInside(ctx context.Context, snapshot, class, claim, pod string, affinity []v1.TopologySelectorTerm) *v1.Node {
	e.pvc(ctx, claim, class, snapshotSource(snapshot))
	e.pod(ctx, pod, nil, claim)
	return e.expectRestoredInside(ctx, snapshot, claim, pod, affinity)
}

// expectRestoredInside is restoreInside's check of a claim and pod made.
func (e *env) expectRestoredInside(ctx context.Context, snapshot, claim, pod string, affinity []v1.TopologySelectorTerm) *v1.Node {
	node := e.waitScheduled(ctx, pod, e.timeout())
	gomega.Expect(termsMatch(affinity, node.Labels)).To(gomega.BeTrueBecause("pod %s on node %s (%v) is inside snapshot %s's nodeAffinity %v", pod, node.Name, node.Labels, snapshot, affinity))
	pv := e.waitBound(ctx, claim)
	gomega.Expect(pvMatches(pv, node.Labels)).To(gomega.BeTrueBecause("restored volume %s (%s) is accessible from node %s", pv.Name, pvAffinity(pv), node.Name))
	e.expectFirstTry(ctx, claim, pod)
	return node
}

// driverNodeIn narrows a segment to one schedulable node in it whose
// CSINode lists the driver. A segment may hold nodes without the driver
// (KEP-5030's cases); without CSIDriver.spec.preventPodSchedulingIfMissing
// the scheduler may pick one, and a WaitForFirstConsumer claim then waits
// for a provisioner that cannot serve that node. Specs that expect a pinned
// pod to schedule pin it here.
func (e *env) driverNodeIn(ctx context.Context, seg driverext.Segment) map[string]string {
	nodes, err := e.f.ClientSet.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set(seg)).String()})
	framework.ExpectNoError(err, "listing the nodes of %s", seg)
	name := e.driver.GetDriverInfo().Name
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		cn, err := e.f.ClientSet.StorageV1().CSINodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil || !slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == name }) {
			continue
		}
		pin := maps.Clone(seg)
		pin[v1.LabelHostname] = n.Labels[v1.LabelHostname]
		return pin
	}
	framework.Failf("no schedulable node in %s has %s in its CSINode", seg, name)
	return nil
}

// waitScheduled waits until a pod is bound to a node and returns the
// node. On timeout the failure carries the evidence (podFacts): a
// WaitForFirstConsumer pod is bound only once its claims are, so a
// refused CreateVolume keeps it unscheduled, and the message must point at
// the driver, not at the scheduler.
func (e *env) waitScheduled(ctx context.Context, name string, timeout time.Duration) *v1.Node {
	var node string
	scheduled := pollUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		pod, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = pod.Spec.NodeName
		return node != "", nil
	})
	if !scheduled {
		framework.Failf("pod %s is not scheduled after %v:%s", name, timeout, e.podFacts(ctx, name))
	}
	n, err := e.f.ClientSet.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	framework.ExpectNoError(err)
	return n
}

// waitBoundOrRefused waits until the claim is bound, or has a
// ProvisioningFailed event whose gRPC code is code (the provisioner writes
// "code = <Code>" into it), and returns that event's message, or "" once
// bound.
func (e *env) waitBoundOrRefused(ctx context.Context, claim, code string) string {
	var refused string
	gomega.Eventually(ctx, func(ctx context.Context) error {
		pvc, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pvc.Status.Phase == v1.ClaimBound {
			return nil
		}
		events, err := e.f.ClientSet.CoreV1().Events(e.ns()).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + claim})
		if err != nil {
			return err
		}
		for _, ev := range events.Items {
			if ev.Reason == "ProvisioningFailed" && rpcCode(ev.Message) == code {
				refused = ev.Message
				return nil
			}
		}
		return fmt.Errorf("PVC %s is %s%s", claim, pvc.Status.Phase, e.lastEvent(ctx, claim))
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	return refused
}

// waitEvent waits for an event of an object that match accepts.
func (e *env) waitEvent(ctx context.Context, object, what string, match func(v1.Event) bool) v1.Event {
	var found v1.Event
	gomega.Eventually(ctx, func(ctx context.Context) error {
		events, err := e.f.ClientSet.CoreV1().Events(e.ns()).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range events.Items {
			if match(ev) {
				found = ev
				return nil
			}
			seen = append(seen, ev.Reason+": "+ev.Message)
		}
		return fmt.Errorf("no event on %s %s; events: %q", object, what, seen)
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	return found
}

// failedSchedulingNaming matches a FailedScheduling event naming any of
// the given objects.
func failedSchedulingNaming(objects ...string) func(v1.Event) bool {
	return eventNaming(func(ev v1.Event) bool { return ev.Reason == "FailedScheduling" }, objects...)
}

// warningNaming matches a Warning event whose message names one of
// objects.
func warningNaming(objects ...string) func(v1.Event) bool {
	return eventNaming(func(ev v1.Event) bool { return ev.Type == v1.EventTypeWarning }, objects...)
}

func eventNaming(kind func(v1.Event) bool, objects ...string) func(v1.Event) bool {
	return func(ev v1.Event) bool {
		return kind(ev) && slices.ContainsFunc(objects, func(o string) bool { return strings.Contains(ev.Message, o) })
	}
}

// expectUnscheduled checks a pod has no node.
func (e *env) expectUnscheduled(ctx context.Context, name string) {
	pod, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, name, metav1.GetOptions{})
	framework.ExpectNoError(err)
	gomega.Expect(pod.Spec.NodeName).To(gomega.BeEmpty(), "pod %s was scheduled", name)
}

// schedulableNodes lists nodes a plain pod can go to.
func (e *env) schedulableNodes(ctx context.Context) []v1.Node {
	nodes, err := readyNodes(ctx, e.f.ClientSet)
	framework.ExpectNoError(err)
	return nodes
}

// needNodesOutside skips when every schedulable node satisfies ts: a spec
// about where pods land would prove nothing.
func (e *env) needNodesOutside(ctx context.Context, ts []v1.TopologySelectorTerm) {
	for _, n := range e.schedulableNodes(ctx) {
		if !termsMatch(ts, n.Labels) {
			return
		}
	}
	e2eskipper.Skipf("every schedulable node is inside %v: where a pod lands proves nothing", ts)
}

// claimName makes the n-th name with a prefix.
func claimName(prefix string, n int) string { return fmt.Sprintf("%s-%d", prefix, n) }

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
