package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// componentLogs names, per label, the components whose logs explain a
// failing spec of that area: the failure message says what was seen, the
// logs why.
var componentLogs = map[string][]string{
	labelSnapshotTopology: {"the CSI snapshotter sidecar (CreateSnapshot requirements, spec.nodeAffinity)", "the CSI provisioner sidecar (restores, Immediate intersection)", "kube-scheduler (the SnapshotTopology plugin)", "snapshot-controller", "the CSI driver's controller"},
	labelTopology:         {"the CSI provisioner sidecar (requisite and preferred)", "kube-scheduler (VolumeBinding)", "the CSI driver's controller (CreateVolume)"},
	labelGateOff:          {"the snapshotter, provisioner and kube-scheduler: their --feature-gates"},
	labelCapabilityOff:    {"the CSI driver's controller (GetPluginCapabilities)", "the CSI snapshotter sidecar"},
	labelAttachLimits:     {"kube-scheduler (NodeVolumeLimits)", "the kubelet's plugin registration and the node plugin (NodeGetInfo max_volumes_per_node, CSINode)"},
}

// diagnose runs after a failed spec, before the framework deletes the
// namespace: it logs the namespace's claims, pods and snapshots with the
// fields these specs turn on, the contents of those snapshots, and the
// components whose logs to read. The framework dumps the events itself.
func (e *env) diagnose(ctx context.Context) {
	report := ginkgo.CurrentSpecReport()
	if !report.Failed() || e.f.Namespace == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "zonepath: objects of namespace %s after the failure:\n", e.ns())
	e.describeClaims(ctx, &b)
	e.describePods(ctx, &b)
	e.describeSnapshots(ctx, &b)
	fmt.Fprintf(&b, "zonepath: component logs to read: %s\n", strings.Join(logsFor(report.Labels()), "; "))
	ginkgo.AddReportEntry("zonepath diagnosis", b.String())
}

// logsFor lists the components of the labels, each once, in label order.
func logsFor(labels []string) []string {
	var out []string
	for _, l := range labels {
		for _, c := range componentLogs[l] {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		out = []string{"the CSI sidecars, kube-scheduler and the CSI driver's controller"}
	}
	return out
}

func (e *env) describeClaims(ctx context.Context, b *strings.Builder) {
	claims, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(b, "  PVCs: %v\n", err)
		return
	}
	for _, c := range claims.Items {
		source := "-"
		if ds := c.Spec.DataSource; ds != nil {
			source = ds.Kind + "/" + ds.Name
		}
		fmt.Fprintf(b, "  PVC %s: phase %s, class %s, source %s, volume %q, selected node %q\n", c.Name, c.Status.Phase,
			ptr.Deref(c.Spec.StorageClassName, "<none>"), source, c.Spec.VolumeName, c.Annotations["volume.kubernetes.io/selected-node"])
	}
}

func (e *env) describePods(ctx context.Context, b *strings.Builder) {
	pods, err := e.f.ClientSet.CoreV1().Pods(e.ns()).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(b, "  pods: %v\n", err)
		return
	}
	for _, p := range pods.Items {
		fmt.Fprintf(b, "  pod %s: phase %s, node %q, nodeSelector %v\n", p.Name, p.Status.Phase, p.Spec.NodeName, p.Spec.NodeSelector)
	}
}

func (e *env) describeSnapshots(ctx context.Context, b *strings.Builder) {
	snaps, err := e.f.DynamicClient.Resource(volumeSnapshots).Namespace(e.ns()).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(b, "  VolumeSnapshots: %v\n", err)
		return
	}
	for _, s := range snaps.Items {
		content, _, _ := unstructured.NestedString(s.Object, "status", "boundVolumeSnapshotContentName")
		ready, _, _ := unstructured.NestedBool(s.Object, "status", "readyToUse")
		fmt.Fprintf(b, "  VolumeSnapshot %s: ready %v, content %q\n", s.GetName(), ready, content)
		if content == "" {
			continue
		}
		c, err := e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, content, metav1.GetOptions{})
		if err != nil {
			fmt.Fprintf(b, "    VolumeSnapshotContent %s: %v\n", content, err)
			continue
		}
		handle, _, _ := unstructured.NestedString(c.Object, "status", "snapshotHandle")
		msg, _, _ := unstructured.NestedString(c.Object, "status", "error", "message")
		fmt.Fprintf(b, "    VolumeSnapshotContent %s: handle %q, nodeAffinity %v, error %q, annotations %v\n",
			content, handle, nodeAffinity(c), msg, c.GetAnnotations())
	}
}
