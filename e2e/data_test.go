package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/test/e2e/framework"
	imageutils "k8s.io/kubernetes/test/utils/image"
)

// defineData holds the specs whose pods really run: kubelet stages and
// publishes the volume through the driver's node service, and a container
// reads and writes it. They need nodes with kubelets (kind, a real
// cluster); on kwok nodes, which only pretend to run pods, leave them out
// with --ginkgo.label-filter '!kubelet'.
func defineData(e *env) {
	label := ginkgo.Label(labelKubelet)

	ginkgo.It("scenario 17: data written in a zone is read back from a snapshot restored into that zone", label, ginkgo.Label(labelSnapshotTopology), func(ctx context.Context) {
		e.needSnapshotTopology()
		seg := e.ext.Segments[0]
		token := names.SimpleNameGenerator.GenerateName("zonepath-")
		wffc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)

		e.pvc(ctx, "data", wffc, nil)
		pin := e.driverNodeIn(ctx, seg)
		writer := e.runPod(ctx, "writer", pin, "data", "echo "+token+" > /data/token && sync && cat /data/token")
		gomega.Expect(writer.message).To(gomega.Equal(token), "writer on %s read back what it wrote", writer.node)
		pv := e.waitBound(ctx, "data")
		gomega.Expect(pvMatches(pv, seg)).To(gomega.BeTrueBecause("volume %s (%s) was provisioned in the writer's segment %s", pv.Name, pvAffinity(pv), seg))
		e.expectRegistered(ctx, writer.node)

		content := e.snapshot(ctx, "data-snapshot", "data", e.snapshotClass(ctx, nil, nil))
		affinity := nodeAffinity(content)
		framework.Logf("VolumeSnapshotContent %s nodeAffinity %v", content.GetName(), affinity)
		gomega.Expect(affinity).NotTo(gomega.BeEmpty(), "VolumeSnapshotContent %s has the driver's accessible_topology as nodeAffinity", content.GetName())
		gomega.Expect(termsMatch(affinity, seg)).To(gomega.BeTrueBecause("the snapshot is usable from its source's segment %s: %v", seg, affinity))

		e.pvc(ctx, "restored", wffc, snapshotSource("data-snapshot"))
		reader := e.runPod(ctx, "reader", nil, "restored", "cat /data/token")
		gomega.Expect(reader.message).To(gomega.Equal(token), "reader on %s read the snapshot's data", reader.node)
		node, err := e.f.ClientSet.CoreV1().Nodes().Get(ctx, reader.node, metav1.GetOptions{})
		framework.ExpectNoError(err)
		gomega.Expect(termsMatch(affinity, node.Labels)).To(gomega.BeTrueBecause("reader on %s (%v) runs inside the snapshot's nodeAffinity %v", node.Name, node.Labels, affinity))
		e.expectFirstTry(ctx, "restored", "reader")
	})
}

// ran is what a pod of runPod left: its node and its termination message.
type ran struct{ node, message string }

// runPod runs script in a busybox container with claim mounted at /data
// until it exits, and returns what it printed: the script's standard
// output goes to the container's termination message, which the API
// server has without a kubelet log proxy (its standard error stays in the
// logs).
func (e *env) runPod(ctx context.Context, name string, selector map[string]string, claim, script string) ran {
	pod := newPod(name, selector, claim)
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	pod.Spec.Containers = []v1.Container{{
		Name: "c", Image: imageutils.GetE2EImage(imageutils.BusyBox),
		Command:                  []string{"sh", "-c", "exec >/dev/termination-log\n" + script},
		TerminationMessagePolicy: v1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []v1.VolumeMount{{Name: pod.Spec.Volumes[0].Name, MountPath: "/data"}},
	}}
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
