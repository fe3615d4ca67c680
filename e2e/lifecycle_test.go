package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// beingCreated is the annotation the snapshotter sidecar keeps on a
// content while a CreateSnapshot may still be in progress or is retried;
// it drops it on a final error.
const beingCreated = "snapshot.storage.kubernetes.io/volumesnapshot-being-created"

// waitingRestore makes a snapshot usable only in segments[0] (an admin
// narrows its content, as in scenario 3) and a pod, pinned to
// segments[1], whose WaitForFirstConsumer claim restores it; it returns
// the content's name once the pod has a FailedScheduling naming them.
func (e *env) waitingRestore(ctx context.Context, snapshot, pod string) string {
	seg, elsewhere := e.segment(0), e.segment(1)
	content := e.sourceSnapshot(ctx, snapshot, seg, nil, nil).GetName()
	e.patchAffinity(ctx, content, terms(seg))
	sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
	e.pvc(ctx, pod+"-restore", sc, snapshotSource(snapshot))
	e.pod(ctx, pod, elsewhere, pod+"-restore")
	ev := e.waitEvent(ctx, pod, "FailedScheduling naming "+snapshot, failedSchedulingNaming(snapshot, content))
	framework.Logf("before the deletion: %s", ev.Message)
	return content
}

// expectUnrelatedRuns checks that a pod with a claim of its own schedules
// and its claim binds while another pod waits: one pod's missing
// snapshot must not stall the scheduling queue or the provisioner.
func (e *env) expectUnrelatedRuns(ctx context.Context, name string) {
	sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
	e.pvc(ctx, name+"-claim", sc, nil)
	e.pod(ctx, name, nil, name+"-claim")
	node := e.waitScheduled(ctx, name, e.timeout())
	pv := e.waitBound(ctx, name+"-claim")
	framework.Logf("unrelated pod %s on %s, volume %s", name, node.Name, pv.Name)
}

// deleteObject deletes a snapshot object, ignoring NotFound.
func (e *env) deleteObject(ctx context.Context, what string, delete func(context.Context, string, metav1.DeleteOptions, ...string) error, name string) {
	err := delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		framework.Failf("deleting %s %s: %v", what, name, err)
	}
}

// expectWaitingNaming checks that a pod is still unscheduled and that its
// PodScheduled condition, the reason a user reads, names one of objects.
func (e *env) expectWaitingNaming(ctx context.Context, name string, objects ...string) {
	pod, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, name, metav1.GetOptions{})
	framework.ExpectNoError(err)
	gomega.Expect(pod.Spec.NodeName).To(gomega.BeEmpty(), "pod %s was scheduled", name)
	c := podScheduledFalse(pod)
	if c == nil {
		framework.Failf("pod %s has no PodScheduled=False condition: %v", name, pod.Status.Conditions)
	}
	framework.Logf("pod %s: %s: %s", name, c.Reason, c.Message)
	if !namesAny(c.Message, objects) {
		framework.Failf("pod %s condition PodScheduled says %q, naming none of %q", name, c.Message, objects)
	}
}

// deletedWhileWaiting is scenario 7: a pod waits on a snapshot restore
// (scenario 3's set-up), then the spec deletes the kind object that
// target names (the snapshot or its content) through client. An unrelated
// pod must schedule and bind meanwhile, and the scheduler must try the
// waiting pod again after the deletion (a reason written before it proves
// nothing about what the scheduler makes of it) and keep it Pending with a
// reason naming the snapshot or content. A conformant snapshot-controller
// holds both deletions with finalizers while a Pending claim restores
// from the snapshot, so the restore could still go ahead; the spec logs
// whether the object was held or is gone.
func (e *env) deletedWhileWaiting(ctx context.Context, snapshot, kind string, client dynamic.ResourceInterface, target func(content string) string) {
	e.needGate()
	content := e.waitingRestore(ctx, snapshot, "waiting")
	before := e.waitingReason(ctx, "waiting", snapshot, content)
	name := target(content)
	deleted := time.Now()
	e.deleteObject(ctx, kind, client.Delete, name)
	e.expectUnrelatedRuns(ctx, "unrelated")
	if obj, err := client.Get(ctx, name, metav1.GetOptions{}); err != nil {
		framework.Logf("%s %s is gone: %v", kind, name, err)
	} else {
		framework.Logf("%s %s is still there (deletionTimestamp %v, finalizers %v): its deletion is held while a claim restores from it", kind, name, obj.GetDeletionTimestamp(), obj.GetFinalizers())
	}
	e.expectReevaluated(ctx, "waiting", before, deleted, snapshot, content)
	e.expectWaitingNaming(ctx, "waiting", snapshot, content)
}

// snapshotError reads a content's status.error: message and time, "" when
// absent.
func snapshotError(content *unstructured.Unstructured) (message, at string) {
	message, _, _ = unstructured.NestedString(content.Object, "status", "error", "message")
	at, _, _ = unstructured.NestedString(content.Object, "status", "error", "time")
	return message, at
}

// boundContent waits until a VolumeSnapshot names its content and returns
// the content.
func (e *env) boundContent(ctx context.Context, snapshot string) *unstructured.Unstructured {
	var content *unstructured.Unstructured
	gomega.Eventually(ctx, func(ctx context.Context) error {
		vs, err := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()).Get(ctx, snapshot, metav1.GetOptions{})
		if err != nil {
			return err
		}
		name, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
		if name == "" {
			return fmt.Errorf("VolumeSnapshot %s has no content yet%s", snapshot, e.lastEvent(ctx, snapshot))
		}
		content, err = e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, name, metav1.GetOptions{})
		return err
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	return content
}

// deleteSnapshotsAndWait deletes the VolumeSnapshots *names lists and
// then waits until their contents are gone, so that the driver has given
// the segment's room back before the next spec snapshots there. All go
// before any wait: a content still being created (RESOURCE_EXHAUSTED)
// is deleted only once its CreateSnapshot succeeds, which needs the
// others' room. Registered right after the snapshot class, it runs before
// the class goes, which that late CreateSnapshot still reads.
func (e *env) deleteSnapshotsAndWait(ctx context.Context, names *[]string) {
	snaps := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns())
	var contents []string
	for _, name := range *names {
		if vs, err := snaps.Get(ctx, name, metav1.GetOptions{}); err == nil {
			if c, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName"); c != "" {
				contents = append(contents, c)
			}
		}
		e.deleteObject(ctx, "VolumeSnapshot", snaps.Delete, name)
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		for _, c := range contents {
			_, err := e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, c, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("VolumeSnapshotContent %s of a deleted VolumeSnapshot still exists (err %v)", c, err)
			}
		}
		return nil
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
}

// needExhaustion skips unless the extension file says how to exhaust a
// segment, and returns the section.
func (e *env) needExhaustion() *driverext.Exhaustion {
	if why := e.ext.ExhaustionMissing(); why != "" {
		e2eskipper.Skipf("%s", why)
	}
	return e.ext.Exhaustion
}

// fillSegment makes the snapshots that fill the exhausted segment, adding
// each to *cleanup as it is created, and returns their names.
func (e *env) fillSegment(ctx context.Context, x *driverext.Exhaustion, claim, class string, cleanup *[]string) []string {
	var fill []string
	for i := 1; i <= x.ExhaustAfter; i++ {
		name := claimName("s11-fill", i)
		e.createSnapshot(ctx, name, claim, class)
		*cleanup = append(*cleanup, name)
		content := e.waitSnapshotReadyOrFailed(ctx, name)
		if ready, _, _ := unstructured.NestedBool(content.Object, "status", "readyToUse"); !ready {
			msg, _ := snapshotError(content)
			framework.Failf("snapshot %d of the %d that fill %s failed: %s; does another spec or a leftover snapshot use the segment?", i, x.ExhaustAfter, x.ExhaustedSegment, msg)
		}
		fill = append(fill, name)
	}
	return fill
}

// waitSnapshotReadyOrFailed waits until a snapshot is ready or its
// content has an error other than a transient one, and returns the
// content. A busy backend's UNAVAILABLE or ABORTED (spec.md, CreateSnapshot
// errors: "Caller SHOULD ensure that there are no other calls pending for
// the specified snapshot, and then retry with exponential back off"; "COs
// MUST handle all valid error codes"), or the sidecar's own
// DeadlineExceeded, is retried by csi-snapshotter with the content kept
// being created: it says nothing of the driver's answer to the request
// yet, so the wait goes on (logged) until the driver gives one.
func (e *env) waitSnapshotReadyOrFailed(ctx context.Context, name string) *unstructured.Unstructured {
	var content *unstructured.Unstructured
	var transient []string
	gomega.Eventually(ctx, func(ctx context.Context) error {
		content = e.boundContent(ctx, name)
		ready, _, _ := unstructured.NestedBool(content.Object, "status", "readyToUse")
		msg, at := snapshotError(content)
		if ready || (msg != "" && !transientError(msg)) {
			return nil
		}
		if msg != "" && !slices.Contains(transient, at+msg) {
			transient = append(transient, at+msg)
			framework.Logf("VolumeSnapshotContent %s of %s: transient error, retried by the snapshotter: %s", content.GetName(), name, msg)
		}
		return fmt.Errorf("VolumeSnapshotContent %s of %s is neither ready nor failed other than transiently (status.error %q)%s", content.GetName(), name, msg, e.lastEvent(ctx, name))
	}).WithTimeout(e.snapshotTimeout()).WithPolling(poll).Should(gomega.Succeed())
	return content
}

// transientError says whether a status.error or event message reports
// one of the codes a sidecar retries in place (retriedInPlace).
func transientError(message string) bool {
	return slices.Contains(retriedInPlace, rpcCode(message))
}

// lift gives the exhausted segment room again the configured way.
func (e *env) lift(ctx context.Context, x *driverext.Exhaustion, fill []string) {
	if len(fill) > 0 {
		e.deleteObject(ctx, "VolumeSnapshot", e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()).Delete, fill[0])
		framework.Logf("lifted: deleted VolumeSnapshot %s", fill[0])
		return
	}
	runCommand(ctx, "exhaustion.liftCommand", x.LiftCommand)
}

func (e *env) liftTimeout(x *driverext.Exhaustion) time.Duration {
	if x.LiftTimeout.Duration > 0 {
		return x.LiftTimeout.Duration
	}
	// The retry after the lift must also become ready to use.
	return e.snapshotTimeout()
}

// expectRetried waits until the content has failed at least twice, by
// its Warning events (a second attempt, whatever reasons the snapshotter
// gives them), while keeping its error and the being-created state:
// RESOURCE_EXHAUSTED is not final. Events of a cluster-scoped content go
// to a namespace of the recorder's choosing, so all are searched.
func (e *env) expectRetried(ctx context.Context, snapshot string) {
	gomega.Eventually(ctx, func(ctx context.Context) error {
		content := e.boundContent(ctx, snapshot)
		if msg, _ := snapshotError(content); msg == "" {
			return gomega.StopTrying(fmt.Sprintf("VolumeSnapshotContent %s lost its error before the segment had room: %v", content.GetName(), content.Object["status"]))
		}
		if content.GetAnnotations()[beingCreated] != "yes" {
			return gomega.StopTrying(fmt.Sprintf("VolumeSnapshotContent %s lost annotation %s: RESOURCE_EXHAUSTED was treated as a final error", content.GetName(), beingCreated))
		}
		events, err := e.f.ClientSet.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=VolumeSnapshotContent,involvedObject.name=" + content.GetName()})
		if err != nil {
			return err
		}
		var failures int32
		var seen []string
		for _, ev := range events.Items {
			if ev.Type == v1.EventTypeWarning {
				failures += occurrences(ev)
				seen = append(seen, ev.Reason+": "+ev.Message)
			}
		}
		if failures < 2 {
			return fmt.Errorf("VolumeSnapshotContent %s has failed %d time(s) by its Warning events %q: not retried yet", content.GetName(), failures, seen)
		}
		framework.Logf("VolumeSnapshotContent %s failed %d times: %q", content.GetName(), failures, seen)
		return nil
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
}

// occurrences is how often an event happened.
func occurrences(ev v1.Event) int32 {
	if ev.Series != nil {
		return ev.Series.Count
	}
	return max(ev.Count, 1)
}

// expectNotReady checks a VolumeSnapshot is not ready to use.
func (e *env) expectNotReady(ctx context.Context, snapshot string) {
	vs, err := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()).Get(ctx, snapshot, metav1.GetOptions{})
	framework.ExpectNoError(err)
	ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
	gomega.Expect(ready).To(gomega.BeFalseBecause("VolumeSnapshot %s is ready although its segment has no room", snapshot))
}

// expectRefusedOutsideSource is scenario 10 for a driver that cuts
// snapshots only in their source's segment (extension file
// snapshotsInSourceSegmentOnly): the class's requisite, which lacks the
// source's segment, must reach the driver and be refused with
// RESOURCE_EXHAUSTED (CSI CreateSnapshot Errors: "Not enough resources to
// create snapshot"), and the snapshot must not become ready. A
// snapshotter that drops the requisite gets a snapshot in the source's
// segment instead, and fails here. Then the class is corrected, as an
// admin would, and the snapshot must become ready in the source's segment.
func (e *env) expectRefusedOutsideSource(ctx context.Context, source, allowed driverext.Segment) {
	sc := e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(source))
	e.pvc(ctx, "s10-snapshot-source", sc, nil)
	e.waitBound(ctx, "s10-snapshot-source")
	names := []string{"s10-snapshot"}
	ginkgo.DeferCleanup(e.deleteSnapshotsAndWait, &names)
	class := e.snapshotClass(ctx, e.ext.RestrictedSnapshotClassParameters, terms(allowed))
	e.createSnapshot(ctx, "s10-snapshot", "s10-snapshot-source", class)
	content := e.waitSnapshotReadyOrFailed(ctx, "s10-snapshot")
	msg, _ := snapshotError(content)
	gomega.Expect(msg).To(gomega.ContainSubstring("ResourceExhausted"),
		"VolumeSnapshotContent %s of a %s volume whose class allows only %s: the driver cuts snapshots only in the source's segment, so it must refuse with RESOURCE_EXHAUSTED (status.error %q)", content.GetName(), source, allowed, msg)
	e.expectNotReady(ctx, "s10-snapshot")
	framework.Logf("snapshot of a %s volume through a class allowing only %s: refused as the extension file says (snapshotsInSourceSegmentOnly): %s", source, allowed, msg)
	// RESOURCE_EXHAUSTED is retried, and a snapshot being created cannot
	// be deleted (the snapshot-controller waits for the creation): the
	// admin's fix, the source's segment allowed too, must let the retry
	// succeed there, which also lets the cleanup delete it.
	e.setAllowedTopologies(ctx, class, terms(allowed, source))
	content = e.waitSnapshotReady(ctx, "s10-snapshot", e.snapshotTimeout())
	e.expectAccessible(ctx, fmt.Sprintf("VolumeSnapshotContent %s (nodeAffinity %v), once its class also allows %s,", content.GetName(), nodeAffinity(content), source), termsAdmit(nodeAffinity(content)), source)
}

// noSuchPlace is the value scenario 18 puts where a zone's name belongs.
const noSuchPlace = "zonepath-e2e-no-such-zone"

// misspelt is seg with every value but its region's replaced by
// noSuchPlace: a zone name with a typo, in a region that exists. A segment
// of the region key alone (a driver whose narrowest segment is a region)
// has its region misspelt instead, or it would name a real place.
func misspelt(seg driverext.Segment, regionKey string) driverext.Segment {
	out := driverext.Segment{}
	for k, v := range seg {
		if k != regionKey || len(seg) == 1 {
			v = noSuchPlace
		}
		out[k] = v
	}
	return out
}

// refusedRequirement are the codes CSI lets a driver answer a snapshot
// requisite naming no place it has: INVALID_ARGUMENT (final) or
// RESOURCE_EXHAUSTED ("Not enough resources to create snapshot",
// retried); zonepath-sanity accepts both.
var refusedRequirement = []string{"InvalidArgument", "ResourceExhausted"}

// waitWarningCode waits for a Warning event on any of objects (a
// namespaced VolumeSnapshot or a cluster-scoped content, whose events go
// to a namespace of the recorder's choosing) reporting one of the gRPC
// codes: the sidecar writes the driver's code into the event, while the
// driver's message is only "a human readable description" (spec.md
// "Error Scheme") and need not name anything.
func (e *env) waitWarningCode(ctx context.Context, codes []string, objects ...string) v1.Event {
	var found v1.Event
	gomega.Eventually(ctx, func(ctx context.Context) error {
		var seen []string
		for _, o := range objects {
			events, err := e.f.ClientSet.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + o})
			if err != nil {
				return err
			}
			for _, ev := range events.Items {
				if ev.Type == v1.EventTypeWarning && slices.Contains(codes, rpcCode(ev.Message)) {
					found = ev
					return nil
				}
				seen = append(seen, ev.InvolvedObject.Kind+" "+ev.Reason+": "+ev.Message)
			}
		}
		return fmt.Errorf("no Warning with code %s on %q; events: %q", strings.Join(codes, " or "), objects, seen)
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	return found
}

// setAllowedTopologies replaces a VolumeSnapshotClass's allowedTopologies,
// as an admin correcting it would.
func (e *env) setAllowedTopologies(ctx context.Context, class string, ts []v1.TopologySelectorTerm) {
	patch, err := json.Marshal(map[string]any{"allowedTopologies": toUnstructured(ts)})
	framework.ExpectNoError(err)
	_, err = e.f.DynamicClient.Resource(volumeSnapshotClasses).Patch(ctx, class, types.MergePatchType, patch, metav1.PatchOptions{})
	framework.ExpectNoError(err, "correcting the allowedTopologies of VolumeSnapshotClass %s", class)
}

func defineLifecycle(e *env) {
	label := ginkgo.Label(labelSnapshotTopology)

	ginkgo.It("scenario 7a: a VolumeSnapshot deleted while a pod restoring it waits blocks no unrelated pod, and the waiting pod's reason names it", label, func(ctx context.Context) {
		e.deletedWhileWaiting(ctx, "s7a-snapshot", "VolumeSnapshot", e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()),
			func(string) string { return "s7a-snapshot" })
	})

	ginkgo.It("scenario 7b: a VolumeSnapshotContent deleted while a pod restoring it waits blocks no unrelated pod, and the waiting pod's reason names it", label, func(ctx context.Context) {
		e.deletedWhileWaiting(ctx, "s7b-snapshot", "VolumeSnapshotContent", e.f.DynamicClient.Resource(volumeSnapshotContents),
			func(content string) string { return content })
	})

	ginkgo.It("scenario 9: a snapshot with an empty accessible_topology restricts nothing: no nodeAffinity, a restoring pod lands in another region", label, func(ctx context.Context) {
		e.needSnapshotTopology()
		if why := e.ext.UnrestrictedMissing(); why != "" {
			e2eskipper.Skipf("%s", why)
		}
		seg := e.segment(0)
		// Another region where there is one: the farthest a restricted
		// snapshot could be from being usable.
		target, why := e.ext.OtherRegion()
		if why != "" {
			framework.Logf("%s; restoring in segments[1]", why)
			target = e.segment(1)
		}
		content := e.sourceSnapshot(ctx, "s9-snapshot", seg, e.ext.UnrestrictedSnapshotClassParameters, nil)
		affinity := nodeAffinity(content)
		gomega.Expect(affinity).To(gomega.BeEmpty(), "VolumeSnapshotContent %s of a class with %v has nodeAffinity %v; the driver's empty accessible_topology restricts nothing", content.GetName(), e.ext.UnrestrictedSnapshotClassParameters, affinity)
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		e.pvc(ctx, "restore", sc, snapshotSource("s9-snapshot"))
		e.pod(ctx, "far", target, "restore")
		node := e.waitScheduled(ctx, "far", e.timeout())
		pv := e.waitBound(ctx, "restore")
		gomega.Expect(pvMatches(pv, node.Labels)).To(gomega.BeTrueBecause("restored volume %s (%s) is accessible from node %s in %s", pv.Name, pvAffinity(pv), node.Name, target))
		e.expectFirstTry(ctx, "restore", "far")
	})

	ginkgo.It("scenario 10: VolumeSnapshotClass.allowedTopologies reaches the driver: a snapshot of a segments[0] volume is usable from segments[1], and a pod where it is not stays Pending", label, func(ctx context.Context) {
		e.needSnapshotTopology()
		source, allowed := e.segment(0), e.segment(1)
		if e.ext.SnapshotsInSourceSegmentOnly {
			e.expectRefusedOutsideSource(ctx, source, allowed)
			return
		}
		content := e.sourceSnapshot(ctx, "s10-snapshot", source, nil, terms(allowed))
		affinity := nodeAffinity(content)
		framework.Logf("VolumeSnapshotContent %s nodeAffinity %v (source in %s, class allows %s)", content.GetName(), affinity, source, allowed)
		gomega.Expect(affinity).NotTo(gomega.BeEmpty(), "VolumeSnapshotContent %s has no nodeAffinity, although its class allows only %s", content.GetName(), allowed)
		e.expectLossless(ctx, "VolumeSnapshotContent "+content.GetName()+" nodeAffinity", affinity, allowed)
		what := fmt.Sprintf("VolumeSnapshotContent %s (nodeAffinity %v), whose class allows only %s,", content.GetName(), affinity, allowed)
		e.expectAccessible(ctx, what, termsAdmit(affinity), allowed)
		// CreateSnapshot's requisite is where the snapshot MUST be usable
		// from; the driver MAY add more (a region for a zone). The pod is
		// then pinned to a segment the snapshot does not reach.
		pinned := source
		if node := admittedIn(e.schedulableNodes(ctx), source, termsAdmit(affinity)); node != "" {
			framework.Logf("%s is also usable from the source's segment %s (node %s): a wider answer, which CSI allows", what, source, node)
			pinned = e.disjointSegment(ctx, "s10-snapshot", content)
		}

		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		e.pvc(ctx, "restore-pinned", sc, snapshotSource("s10-snapshot"))
		e.pod(ctx, "pinned", pinned, "restore-pinned")
		e.pvc(ctx, "restore-free", sc, snapshotSource("s10-snapshot"))
		e.pod(ctx, "free", nil, "restore-free")
		node := e.waitScheduled(ctx, "free", e.timeout())
		gomega.Expect(termsMatch(affinity, node.Labels)).To(gomega.BeTrueBecause("pod free on node %s (%v) is inside the snapshot's nodeAffinity %v", node.Name, node.Labels, affinity))
		pv := e.waitBound(ctx, "restore-free")
		gomega.Expect(pvMatches(pv, node.Labels)).To(gomega.BeTrueBecause("restored volume %s (%s) is accessible from node %s", pv.Name, pvAffinity(pv), node.Name))
		ev := e.waitEvent(ctx, "pinned", "FailedScheduling naming s10-snapshot", failedSchedulingNaming("s10-snapshot", content.GetName()))
		framework.Logf("pinned to %s: %s", pinned, ev.Message)
		e.expectStaysUnscheduled(ctx, "pinned", []string{content.GetName()}, "s10-snapshot", content.GetName())
	})

	ginkgo.It("scenario 11: RESOURCE_EXHAUSTED from CreateSnapshot: content status.error and a Warning event, retried with backoff, ready once the segment has room", label, func(ctx context.Context) {
		x := e.needExhaustion()
		seg := x.ExhaustedSegment
		e.pvc(ctx, "s11-source", e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(seg)), nil)
		e.waitBound(ctx, "s11-source")
		// With snapshot topology the class asks for the segment; without,
		// a snapshot stays with its source there.
		var allowed []v1.TopologySelectorTerm
		if e.ext.SnapshotTopologyMissing() == "" {
			allowed = terms(seg)
		}
		class := e.snapshotClass(ctx, nil, allowed)
		names := []string{"s11-exhausted"}
		ginkgo.DeferCleanup(e.deleteSnapshotsAndWait, &names)
		fill := e.fillSegment(ctx, x, "s11-source", class, &names)

		e.createSnapshot(ctx, "s11-exhausted", "s11-source", class)
		first := e.waitSnapshotReadyOrFailed(ctx, "s11-exhausted")
		msg, _ := snapshotError(first)
		gomega.Expect(msg).To(gomega.ContainSubstring("ResourceExhausted"), "VolumeSnapshotContent %s of a snapshot in full segment %s: status.error %q, want the driver's RESOURCE_EXHAUSTED", first.GetName(), seg, msg)
		e.expectRetried(ctx, "s11-exhausted")
		e.expectNotReady(ctx, "s11-exhausted")

		lifted := time.Now()
		e.lift(ctx, x, fill)
		content := e.waitSnapshotReady(ctx, "s11-exhausted", e.liftTimeout(x))
		framework.Logf("VolumeSnapshot s11-exhausted ready %.1fs after the lift (content %s)", time.Since(lifted).Seconds(), content.GetName())
		if msg, _ := snapshotError(content); strings.Contains(msg, "ResourceExhausted") {
			framework.Failf("VolumeSnapshotContent %s is ready but still reports %q", content.GetName(), msg)
		}
	})
	ginkgo.It("scenario 18: a VolumeSnapshotClass.allowedTopologies naming a zone the driver does not have: a Warning with the driver's code, never ready, and the VolumeSnapshot can be deleted, leaving nothing", label, func(ctx context.Context) {
		e.needSnapshotTopology()
		seg := e.segment(0)
		e.pvc(ctx, "s18-source", e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(seg)), nil)
		e.waitBound(ctx, "s18-source")
		class := e.snapshotClass(ctx, nil, terms(misspelt(seg, e.ext.RegionKey)))
		names := []string{"s18-misspelt"}
		ginkgo.DeferCleanup(e.deleteSnapshotsAndWait, &names)
		e.createSnapshot(ctx, "s18-misspelt", "s18-source", class)

		content := e.waitSnapshotReadyOrFailed(ctx, "s18-misspelt")
		msg, _ := snapshotError(content)
		if ready, _, _ := unstructured.NestedBool(content.Object, "status", "readyToUse"); ready {
			framework.Failf("VolumeSnapshotContent %s is ready, though its class allows only %s, which names no zone of the driver", content.GetName(), misspelt(seg, e.ext.RegionKey))
		}
		ev := e.waitWarningCode(ctx, refusedRequirement, "s18-misspelt", content.GetName())
		framework.Logf("Warning on %s %s: %s: %s", ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Message)
		e.expectNotReady(ctx, "s18-misspelt")
		if strings.Contains(msg, "ResourceExhausted") {
			// CSI leaves the reading open (zonepath-sanity accepts both):
			// RESOURCE_EXHAUSTED is retried and holds the deletion, so the
			// admin corrects the class and the retry must use it.
			framework.Logf("the driver answered RESOURCE_EXHAUSTED (retried, not final): %s; correcting the class", msg)
			e.setAllowedTopologies(ctx, class, terms(seg))
			e.waitSnapshotReady(ctx, "s18-misspelt", e.snapshotTimeout())
		} else {
			framework.Logf("the driver's answer is final: %s", msg)
			gomega.Eventually(ctx, func(ctx context.Context) error {
				c, err := e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, content.GetName(), metav1.GetOptions{})
				if err != nil {
					return err
				}
				if _, ok := c.GetAnnotations()[beingCreated]; ok {
					return fmt.Errorf("VolumeSnapshotContent %s keeps %s after the final error %q, so its VolumeSnapshot cannot be deleted", c.GetName(), beingCreated, msg)
				}
				return nil
			}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
		}
		// Deleted as the user would, within the usual timeout: the content
		// and the driver's snapshot, if one was cut, go with it.
		e.deleteSnapshotsAndWait(ctx, &names)
		gomega.Eventually(ctx, func(ctx context.Context) error {
			vs, err := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()).Get(ctx, "s18-misspelt", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("VolumeSnapshot s18-misspelt is still there after its deletion: finalizers %v", vs.GetFinalizers())
		}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	})
}
