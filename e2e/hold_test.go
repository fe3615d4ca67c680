package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
)

// selectedNode is the annotation the scheduler sets on a
// WaitForFirstConsumer claim when it has chosen a node for the claim's
// pod (VolumeBinding's PreBind), before the volume exists: the trace of
// a placement that a failed provisioning may undo before the pod is ever
// bound.
const selectedNode = "volume.kubernetes.io/selected-node"

// holdWindow is how long a pod that must never be scheduled is watched
// after a forced re-evaluation: well past kube-scheduler's first
// backoffs (1 s, 2 s, 4 s), so that the retried attempt falls inside it.
const holdWindow = 15 * time.Second

// podScheduledFalse is a pod's PodScheduled=False condition, nil when it
// has none.
func podScheduledFalse(pod *v1.Pod) *v1.PodCondition {
	for i, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// namesAny says whether text names one of objects.
func namesAny(text string, objects []string) bool {
	return slices.ContainsFunc(objects, func(o string) bool { return strings.Contains(text, o) })
}

// waitingReason waits until a pod has a PodScheduled=False condition
// naming one of objects and returns its message: the reason the scheduler
// last wrote.
func (e *env) waitingReason(ctx context.Context, pod string, objects ...string) string {
	var msg string
	gomega.Eventually(ctx, func(ctx context.Context) error {
		p, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := podScheduledFalse(p)
		if c == nil || !namesAny(c.Message, objects) {
			return fmt.Errorf("pod %s has no PodScheduled=False condition naming one of %q: %v", pod, objects, p.Status.Conditions)
		}
		msg = c.Message
		return nil
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	return msg
}

// lastOccurrence is when an event last happened, by whichever of its
// clocks the recorder set (events.k8s.io sets eventTime and the series,
// core/v1 recorders lastTimestamp).
func lastOccurrence(ev v1.Event) time.Time {
	last := ev.EventTime.Time
	if ev.LastTimestamp.After(last) {
		last = ev.LastTimestamp.Time
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(last) {
		last = ev.Series.LastObservedTime.Time
	}
	return last
}

// reevaluated says how the scheduler showed that it tried pod again since
// a moment: its PodScheduled=False condition, naming one of objects, now
// differs from before, or a FailedScheduling event naming one of them
// occurred since then. "" when neither is seen. A scheduler folds repeated
// events into a series whose later counts reach the API only every 30
// minutes (k8s.io/client-go/tools/events), so the condition is the
// reliable witness; the event covers a scheduler that writes the same
// reason again, for its second occurrence. Times are compared with this
// machine's clock, as the suite's cluster shares it or keeps it in sync.
func (e *env) reevaluated(ctx context.Context, pod, before string, since time.Time, objects []string) (string, error) {
	p, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if c := podScheduledFalse(p); c != nil && c.Message != before && namesAny(c.Message, objects) {
		return "its PodScheduled reason changed to " + c.Message, nil
	}
	events, err := e.f.ClientSet.CoreV1().Events(e.ns()).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		return "", err
	}
	for _, ev := range events.Items {
		if ev.Reason == "FailedScheduling" && namesAny(ev.Message, objects) && lastOccurrence(ev).After(since) {
			return fmt.Sprintf("FailedScheduling again at %s: %s", lastOccurrence(ev).Format(time.RFC3339Nano), ev.Message), nil
		}
	}
	return "", nil
}

// expectReevaluated waits, up to requeueBound, until the scheduler has
// tried a waiting pod again since a change at since (a deletion, which
// must requeue it) and found it still unschedulable for one of objects.
// before is the reason it gave before the change.
func (e *env) expectReevaluated(ctx context.Context, pod, before string, since time.Time, objects ...string) {
	gomega.Eventually(ctx, func(ctx context.Context) error {
		if err := e.notPlaced(ctx, pod); err != nil {
			return gomega.StopTrying(err.Error())
		}
		how, err := e.reevaluated(ctx, pod, before, since, objects)
		if err != nil {
			return err
		}
		if how == "" {
			return fmt.Errorf("the scheduler has not tried pod %s again since %s: its PodScheduled reason is still %q and no FailedScheduling naming one of %q occurred since", pod, since.Format(time.RFC3339Nano), before, objects)
		}
		framework.Logf("pod %s re-evaluated %.1fs after the change: %s", pod, time.Since(since).Seconds(), how)
		return nil
	}).WithTimeout(requeueBound).WithPolling(poll).Should(gomega.Succeed())
}

// notPlaced fails when the scheduler has placed pod: bound it to a node,
// or chosen a node for one of its WaitForFirstConsumer claims (their
// selected-node annotation), which a provisioner that cannot restore
// there undoes before the pod is ever bound.
func (e *env) notPlaced(ctx context.Context, pod string) error {
	p, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Spec.NodeName != "" {
		return fmt.Errorf("pod %s was scheduled to node %s", pod, p.Spec.NodeName)
	}
	for _, vol := range p.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		c, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, vol.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if node := c.Annotations[selectedNode]; node != "" {
			return fmt.Errorf("the scheduler chose node %s for pod %s (annotation %s on its claim %s)", node, pod, selectedNode, c.Name)
		}
	}
	return nil
}

// expectStaysUnscheduled checks that a pod the scheduler rejected for a
// snapshot's topology is not placed on a later attempt either. It forces
// one (an admin rewrites each content's nodeAffinity in an equivalent
// form, its first term repeated, which requeues the pods restoring from
// it as any nodeAffinity edit must: scenario 6), then watches the pod and
// its claims for holdWindow, failing as soon as the scheduler places the
// pod, and checks it still waits with a reason naming one of objects. It
// logs whether the re-evaluation showed; a scheduler that does not requeue
// on the edit fails scenario 6, not this check.
func (e *env) expectStaysUnscheduled(ctx context.Context, pod string, contents []string, objects ...string) {
	before := e.waitingReason(ctx, pod, objects...)
	forced := time.Now()
	for _, c := range contents {
		e.rewriteAffinity(ctx, c)
	}
	seen := ""
	deadline := forced.Add(holdWindow)
	for time.Now().Before(deadline) {
		framework.ExpectNoError(e.notPlaced(ctx, pod), "within %s of the forced re-evaluation", holdWindow)
		if seen == "" {
			how, err := e.reevaluated(ctx, pod, before, forced, objects)
			framework.ExpectNoError(err)
			if how != "" {
				seen = fmt.Sprintf("%.1fs after the rewrite, %s", time.Since(forced).Seconds(), how)
			}
		}
		select {
		case <-ctx.Done():
			framework.Failf("pod %s: %v", pod, ctx.Err())
		case <-time.After(poll):
		}
	}
	if seen == "" {
		seen = "not seen (the reason is unchanged and no FailedScheduling since)"
	}
	framework.Logf("pod %s not placed for %s after the nodeAffinity rewrite; re-evaluation: %s", pod, holdWindow, seen)
	e.expectWaitingNaming(ctx, pod, objects...)
}

// rewriteAffinity rewrites a content's nodeAffinity in an equivalent
// form, its first term repeated: the same nodes, an update event.
func (e *env) rewriteAffinity(ctx context.Context, content string) {
	c, err := e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, content, metav1.GetOptions{})
	framework.ExpectNoError(err)
	ts := nodeAffinity(c)
	gomega.Expect(ts).NotTo(gomega.BeEmpty(), "VolumeSnapshotContent %s has no nodeAffinity to rewrite", content)
	e.patchAffinity(ctx, content, append(ts, ts[0]))
}
