package e2e

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"
)

// needGateOff skips unless the cluster's components run with the
// VolumeSnapshotTopology gate off while the driver keeps its capability.
func (e *env) needGateOff() {
	if why := e.ext.GateOffMissing(); why != "" {
		e2eskipper.Skipf("%s", why)
	}
}

func defineGateOff(e *env) {
	labels := ginkgo.Label(labelGateOff, labelSnapshotTopology)

	ginkgo.It("scenario 14: with the gate off the controllers write no nodeAffinity, filter nothing and leave an admin's nodeAffinity untouched", labels, func(ctx context.Context) {
		e.needGateOff()
		// A region-wide snapshot, so that the driver can restore it in
		// a second segment: only the scheduler could keep the pod out.
		other := e.needRegionWide()
		seg := e.segment(0)

		// (a) The driver still returns accessible_topology; with the
		// gate off the snapshotter must not turn it into nodeAffinity.
		content := e.sourceSnapshot(ctx, "s14-snapshot", seg, e.ext.RegionWideSnapshotClassParameters, nil)
		gomega.Expect(nodeAffinity(content)).To(gomega.BeEmpty(),
			"VolumeSnapshotContent %s got spec.nodeAffinity, although the cluster runs with VolumeSnapshotTopology off", content.GetName())

		// (b) An admin narrows the content to seg. (c) A pod pinned to
		// other, outside it, must still be scheduled and its restore
		// bound: no component enforces the field with the gate off.
		written := terms(seg)
		e.patchAffinity(ctx, content.GetName(), written)
		sc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		e.pvc(ctx, "restore", sc, snapshotSource("s14-snapshot"))
		e.pod(ctx, "outside", e.driverNodeIn(ctx, other), "restore")
		node := e.waitScheduled(ctx, "outside", e.timeout())
		pv := e.waitBound(ctx, "restore")
		gomega.Expect(pvMatches(pv, node.Labels)).To(gomega.BeTrueBecause("restored volume %s (%s) is accessible from node %s", pv.Name, pvAffinity(pv), node.Name))
		framework.Logf("pod scheduled to %s in %s, outside the admin's nodeAffinity %v", node.Name, other, written)

		// (d) Nor does the provisioner intersect for Immediate binding: a
		// class allowing only other restores there (with the gate on it
		// would be refused as disjoint, scenario 12).
		immediate := e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(other))
		e.pvc(ctx, "immediate", immediate, snapshotSource("s14-snapshot"))
		ipv := e.waitBound(ctx, "immediate")
		e.expectAccessible(ctx, fmt.Sprintf("Immediate restore %s (%s), in the class's only segment,", ipv.Name, pvAffinity(ipv)), pvAdmits(ipv), other)

		// The snapshotter, the provisioner and the scheduler have all
		// handled the content since the patch: what the admin wrote stays.
		got, err := e.f.DynamicClient.Resource(volumeSnapshotContents).Get(ctx, content.GetName(), metav1.GetOptions{})
		framework.ExpectNoError(err)
		gomega.Expect(nodeAffinity(got)).To(gomega.Equal(written),
			"VolumeSnapshotContent %s spec.nodeAffinity changed after the restore; the admin wrote %v", content.GetName(), written)
	})
}
