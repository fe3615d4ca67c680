package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
)

// annSelectedNode is the node the scheduler chose for a
// WaitForFirstConsumer claim; the provisioner removes it to reschedule.
const annSelectedNode = "volume.kubernetes.io/selected-node"

// rpcCodeRE finds the gRPC code the sidecars and kubelet write into an
// event's message ("rpc error: code = Unavailable desc = ...").
var rpcCodeRE = regexp.MustCompile(`rpc error: code = (\w+)`)

// rpcCode is the first gRPC code an event's message reports, or "".
func rpcCode(message string) string {
	if m := rpcCodeRE.FindStringSubmatch(message); m != nil {
		return m[1]
	}
	return ""
}

// retriedInPlace are the codes after which the external-provisioner keeps
// the selected node and calls CreateVolume again (its checkError answers
// ProvisioningInBackground), and kubelet and the attacher retry the same
// node: a slow or flaky backend, not a choice of node. RESOURCE_EXHAUSTED
// is not among them: for a claim with a selected node the provisioner
// gives up on that node and the scheduler chooses again.
var retriedInPlace = []string{"Canceled", "DeadlineExceeded", "Unavailable", "Aborted"}

// retryingReasons are the Warning reasons whose transient codes are
// tolerated: the provisioner's and kubelet's, about a node already chosen.
var retryingReasons = []string{"ProvisioningFailed", "FailedAttachVolume", "FailedMount"}

// tolerated says why a Warning on the claim or pod of a first-try check
// is no evidence that the node was chosen again, or "" when it is.
func tolerated(ev v1.Event) string {
	if ev.Type != v1.EventTypeWarning {
		return "not a Warning"
	}
	if notYetSeen(ev) {
		return "informer lag"
	}
	code := rpcCode(ev.Message)
	if slices.Contains(retryingReasons, ev.Reason) && slices.Contains(retriedInPlace, code) {
		return "transient " + code + ", retried on the same node"
	}
	return ""
}

// expectFirstTry checks that the scheduler placed a pod holding a
// WaitForFirstConsumer claim right the first time. Evidence that it did
// not: a Warning on the claim or pod that makes the node be chosen again
// (a ProvisioningFailed with RESOURCE_EXHAUSTED or any other refusal of
// the node, a FailedScheduling after the volume was made elsewhere), or a
// claim whose selected-node annotation names another node than the pod's.
// A slow or flaky backend (UNAVAILABLE, ABORTED, the provisioner's
// DeadlineExceeded) and informer lag are retries on the same node: logged,
// not failed. A pod that lands right only by retries of the node choice
// passes where it lands but not here.
func (e *env) expectFirstTry(ctx context.Context, claim, pod string) {
	var seen, evidence []string
	for _, object := range []string{claim, pod} {
		events, err := e.f.ClientSet.CoreV1().Events(e.ns()).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + object})
		framework.ExpectNoError(err)
		for _, ev := range events.Items {
			line := fmt.Sprintf("%s %s %s (x%d): %s", object, ev.Type, ev.Reason, max(ev.Count, 1), ev.Message)
			seen = append(seen, line)
			switch why := tolerated(ev); why {
			case "not a Warning":
			case "":
				evidence = append(evidence, line)
			default:
				framework.Logf("first try of %s: tolerated (%s): %s", pod, why, line)
			}
		}
	}
	chosen, selected := e.chosenNodes(ctx, claim, pod)
	if selected != "" && chosen != "" && selected != chosen {
		evidence = append(evidence, fmt.Sprintf("claim %s: %s is %q, but pod %s runs on %q", claim, annSelectedNode, selected, pod, chosen))
	}
	if len(evidence) > 0 {
		framework.Failf("pod %s (node %q, claim %s selected-node %q) was not placed right the first time: the node was chosen again after\n  %s\nall events:\n  %s",
			pod, chosen, claim, selected, strings.Join(evidence, "\n  "), strings.Join(seen, "\n  "))
	}
}

// chosenNodes are the pod's node and the claim's selected-node annotation.
func (e *env) chosenNodes(ctx context.Context, claim, pod string) (chosen, selected string) {
	p, err := e.f.ClientSet.CoreV1().Pods(e.ns()).Get(ctx, pod, metav1.GetOptions{})
	framework.ExpectNoError(err, "getting pod %s", pod)
	c, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, claim, metav1.GetOptions{})
	framework.ExpectNoError(err, "getting claim %s", claim)
	return p.Spec.NodeName, c.Annotations[annSelectedNode]
}
