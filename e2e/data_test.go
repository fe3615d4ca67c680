package e2e

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/test/e2e/framework"
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
		e.expectAccessible(ctx, fmt.Sprintf("volume %s (%s), provisioned in the writer's segment,", pv.Name, pvAffinity(pv)), pvAdmits(pv), seg)
		e.expectRegistered(ctx, writer.node)

		content := e.snapshot(ctx, "data-snapshot", "data", e.snapshotClass(ctx, nil, nil))
		affinity := nodeAffinity(content)
		framework.Logf("VolumeSnapshotContent %s nodeAffinity %v", content.GetName(), affinity)
		gomega.Expect(affinity).NotTo(gomega.BeEmpty(), "VolumeSnapshotContent %s has the driver's accessible_topology as nodeAffinity", content.GetName())
		e.expectAccessible(ctx, fmt.Sprintf("snapshot content %s (nodeAffinity %v), usable from its source's segment,", content.GetName(), affinity), termsAdmit(affinity), seg)

		e.pvc(ctx, "restored", wffc, snapshotSource("data-snapshot"))
		reader := e.runPod(ctx, "reader", nil, "restored", "cat /data/token")
		gomega.Expect(reader.message).To(gomega.Equal(token), "reader on %s read the snapshot's data", reader.node)
		node, err := e.f.ClientSet.CoreV1().Nodes().Get(ctx, reader.node, metav1.GetOptions{})
		framework.ExpectNoError(err)
		gomega.Expect(termsMatch(affinity, node.Labels)).To(gomega.BeTrueBecause("reader on %s (%v) runs inside the snapshot's nodeAffinity %v", node.Name, node.Labels, affinity))
		e.expectFirstTry(ctx, "restored", "reader")
	})
}
