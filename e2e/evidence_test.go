package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/kubernetes/test/e2e/framework"
)

// A wait that times out must say what was seen and which component it
// points at: a WaitForFirstConsumer pod is bound to a node only once its
// claims are, so "pod not scheduled" after a refused CreateVolume would
// blame the scheduler for the driver's answer. The evidence is gathered
// once, when the wait gives up, from the objects the components write:
// the claims' events (the provisioner writes the driver's gRPC code into
// ProvisioningFailed), their selected-node annotation (the scheduler's
// choice), the snapshot contents' status.error (the snapshotter's), and
// the pod's own events.

// claimEvidence is what the cluster says about one claim of a pod.
type claimEvidence struct {
	Name, Phase, SelectedNode string
	// Source is the claim's data source, "Kind/name", or "".
	Source string
	// Warnings are the claim's Warning events, oldest first.
	Warnings []v1.Event
	// Snapshot says how the claim's source VolumeSnapshot stands, "" when
	// the source is none.
	Snapshot string
	// ContentError is the source snapshot's content status.error.message.
	ContentError string
	// Misplaced describes the claim's volume when its nodeAffinity does
	// not admit the selected node, "" otherwise.
	Misplaced string
}

// podEvidence is what the cluster says about a pod that did not
// schedule: its node (empty), its claims and its Warning events.
type podEvidence struct {
	Pod      string
	Claims   []claimEvidence
	Warnings []v1.Event
}

// eventLine is one event as a failure message shows it, with the gRPC
// code the sidecars wrote into it.
func eventLine(ev v1.Event) string {
	code := ""
	if c := rpcCode(ev.Message); c != "" {
		code = ", code " + c
	}
	return fmt.Sprintf("%s (x%d%s): %s", ev.Reason, max(ev.Count, 1), code, ev.Message)
}

// blame names the component the evidence points at, first match wins:
// the driver when it answered a provisioning call with a code, the
// snapshotter when the source's content has an error, the provisioner
// for its own failures, the scheduler only when no claim is waiting on
// anything else.
func (c claimEvidence) blame() string {
	for _, ev := range slices.Backward(c.Warnings) {
		if ev.Reason != "ProvisioningFailed" {
			continue
		}
		if code := rpcCode(ev.Message); code != "" {
			return fmt.Sprintf("the CSI driver answered CreateVolume for claim %s with code %s (node %s)", c.Name, code, quoted(c.SelectedNode))
		}
		return fmt.Sprintf("the external-provisioner failed claim %s: %s", c.Name, ev.Message)
	}
	if c.Misplaced != "" {
		return fmt.Sprintf("the CSI driver provisioned claim %s's %s, outside its selected node %s (CreateVolume's preferred segment)", c.Name, c.Misplaced, c.SelectedNode)
	}
	if c.ContentError != "" {
		return fmt.Sprintf("the source of claim %s (%s) has a content error: %s", c.Name, c.Source, c.ContentError)
	}
	return ""
}

func quoted(node string) string {
	if node == "" {
		return "none selected"
	}
	return node
}

// String is the failure message's evidence, one fact a line.
func (p podEvidence) String() string {
	var b strings.Builder
	var verdicts []string
	for _, c := range p.Claims {
		b.WriteString(c.String())
		if v := c.blame(); v != "" {
			verdicts = append(verdicts, v)
		}
	}
	for _, ev := range p.Warnings {
		fmt.Fprintf(&b, "\n  pod %s: %s", p.Pod, eventLine(ev))
	}
	switch {
	case len(verdicts) > 0:
		fmt.Fprintf(&b, "\n  points at: %s", strings.Join(verdicts, "; "))
	case len(p.Warnings) > 0:
		fmt.Fprintf(&b, "\n  points at: kube-scheduler (%s)", p.Warnings[len(p.Warnings)-1].Reason)
	default:
		b.WriteString("\n  points at: nothing recorded a reason (no Warning on the pod or its claims)")
	}
	return b.String()
}

// String is one claim's facts.
func (c claimEvidence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  claim %s: phase %s, selected node %s", c.Name, c.Phase, quoted(c.SelectedNode))
	if c.Source != "" {
		fmt.Fprintf(&b, ", source %s", c.Source)
	}
	if c.Snapshot != "" {
		fmt.Fprintf(&b, "\n    %s", c.Snapshot)
	}
	if c.ContentError != "" {
		fmt.Fprintf(&b, "\n    content status.error: %s", c.ContentError)
	}
	if c.Misplaced != "" {
		fmt.Fprintf(&b, "\n    %s does not admit the selected node", c.Misplaced)
	}
	for _, ev := range c.Warnings {
		fmt.Fprintf(&b, "\n    %s", eventLine(ev))
	}
	return b.String()
}

// warnings are an object's Warning events, oldest first.
func (e *env) warnings(ctx context.Context, object string) []v1.Event {
	events, err := e.f.ClientSet.CoreV1().Events(e.ns()).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
	if err != nil {
		return []v1.Event{{Type: v1.EventTypeWarning, Reason: "EventsUnreadable", Message: err.Error()}}
	}
	var out []v1.Event
	for _, ev := range events.Items {
		if ev.Type == v1.EventTypeWarning {
			out = append(out, ev)
		}
	}
	slices.SortStableFunc(out, func(a, b v1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
	return collapse(out)
}

// collapse joins events of one reason and message into the last of them,
// counts summed: a scheduler retrying writes the same words many times.
func collapse(events []v1.Event) []v1.Event {
	var out []v1.Event
	seen := map[string]int{}
	for _, ev := range events {
		key := ev.Reason + "\x00" + ev.Message
		if i, ok := seen[key]; ok {
			ev.Count = max(out[i].Count, 1) + max(ev.Count, 1)
			out = append(out[:i], out[i+1:]...)
			for k, j := range seen {
				if j > i {
					seen[k] = j - 1
				}
			}
		}
		seen[key] = len(out)
		out = append(out, ev)
	}
	return out
}

// claimFacts gathers a claim's evidence.
func (e *env) claimFacts(ctx context.Context, name string) claimEvidence {
	c := claimEvidence{Name: name, Warnings: e.warnings(ctx, name)}
	claim, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		c.Phase = "unreadable: " + err.Error()
		return c
	}
	c.Phase, c.SelectedNode = string(claim.Status.Phase), claim.Annotations[annSelectedNode]
	if claim.Status.Phase == v1.ClaimBound && c.SelectedNode != "" {
		c.Misplaced = e.misplaced(ctx, claim.Spec.VolumeName, c.SelectedNode)
	}
	if ds := claim.Spec.DataSource; ds != nil {
		c.Source = ds.Kind + "/" + ds.Name
		if ds.Kind == "VolumeSnapshot" {
			c.Snapshot, c.ContentError = e.snapshotFacts(ctx, ds.Name)
		}
	}
	return c
}

// misplaced describes volume when its nodeAffinity does not admit node,
// or "".
func (e *env) misplaced(ctx context.Context, volume, node string) string {
	pv, err := e.f.ClientSet.CoreV1().PersistentVolumes().Get(ctx, volume, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	n, err := e.f.ClientSet.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil || pvMatches(pv, n.Labels) {
		return ""
	}
	return fmt.Sprintf("volume %s (%s)", pv.Name, pvAffinity(pv))
}

// snapshotFacts says how a VolumeSnapshot stands and its content's error.
func (e *env) snapshotFacts(ctx context.Context, name string) (string, string) {
	vs, err := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("VolumeSnapshot %s: %v", name, err), ""
	}
	ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
	bound, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	facts := fmt.Sprintf("VolumeSnapshot %s: ready %v, content %q", name, ready, bound)
	if bound == "" {
		return facts, ""
	}
	content, err := e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, bound, metav1.GetOptions{})
	if err != nil {
		return facts + ": " + err.Error(), ""
	}
	msg, _, _ := unstructured.NestedString(content.Object, "status", "error", "message")
	return fmt.Sprintf("%s, nodeAffinity %v", facts, nodeAffinity(content)), msg
}

// podFacts gathers a pod's evidence: its claims' and its own.
func (e *env) podFacts(ctx context.Context, name string) podEvidence {
	p := podEvidence{Pod: name, Warnings: e.warnings(ctx, name)}
	pod, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return p
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			p.Claims = append(p.Claims, e.claimFacts(ctx, v.PersistentVolumeClaim.ClaimName))
		}
	}
	return p
}

// poll calls done every poll interval until it says true or timeout
// passes; it reports whether done said true. Errors of done are retried:
// a wait outlives an API server's hiccup.
func pollUntil(ctx context.Context, timeout time.Duration, done func(context.Context) (bool, error)) bool {
	err := wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := done(ctx)
		if err != nil {
			framework.Logf("retrying: %v", err)
		}
		return ok && err == nil, nil
	})
	return err == nil
}
