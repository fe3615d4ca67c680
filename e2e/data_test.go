package e2e

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/test/e2e/framework"
	e2epod "k8s.io/kubernetes/test/e2e/framework/pod"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"
	"k8s.io/utils/ptr"
)

// defineData holds the specs whose pods really run: kubelet stages and
// publishes the volume through the driver's node service, and a container
// reads and writes it. They need nodes with kubelets (kind, a real
// cluster); on kwok nodes, which only pretend to run pods, leave them out
// with --ginkgo.label-filter '!kubelet'. Scenario 23 publishes a raw
// block volume read-only (csi.proto NodePublishVolumeRequest.readonly and
// ControllerPublishVolumeRequest.readonly: "the SP MUST publish the
// volume in readonly mode").
func defineData(e *env) {
	label := ginkgo.Label(labelKubelet)

	ginkgo.It("scenario 17: data written in a zone is read back from a snapshot restored into that zone", label, ginkgo.Label(labelSnapshotTopology), func(ctx context.Context) {
		e.needSnapshotTopology()
		seg := e.segment(0)
		token := names.SimpleNameGenerator.GenerateName("zonepath-")
		wffc := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)

		e.pvc(ctx, "data", wffc, nil)
		pin := e.driverNodeIn(ctx, seg)
		writer := e.runPod(ctx, "writer", pin, "data", "echo "+token+" > /data/token && sync && cat /data/token")
		gomega.Expect(writer.message).To(gomega.Equal(token), "writer on %s read back what it wrote", writer.node)
		pv := e.waitBound(ctx, "data")
		e.expectAccessible(ctx, fmt.Sprintf("volume %s (%s), provisioned in the writer's segment,", pv.Name, pvAffinity(pv)), pvAdmits(pv), seg)
		e.expectRegistered(ctx, writer.node)

		// A class of restricted snapshots: the spec checks the content's
		// nodeAffinity, which a driver unrestricted by default (no
		// accessible_topology: "equally usable from all topologies") leaves
		// empty unless the class asks for a restricted one.
		content := e.snapshot(ctx, "data-snapshot", "data", e.snapshotClass(ctx, e.ext.RestrictedSnapshotClassParameters, nil))
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

	ginkgo.It("scenario 23: a raw block volume published read-only refuses a pod's writes and keeps its data", label, func(ctx context.Context) {
		if !e.driver.GetDriverInfo().Capabilities[storageframework.CapBlock] {
			e2eskipper.Skipf("driver file: DriverInfo.Capabilities.block is not true: the driver has no raw block volumes to publish")
		}
		pin := e.driverNodeIn(ctx, e.segment(0))
		token := names.SimpleNameGenerator.GenerateName("zonepath-golden-")
		claim := e.newClaim("golden", e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil))
		claim.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
		e.createClaim(ctx, claim)

		writer := e.runBlockPod(ctx, "writer", pin, "golden", false, false,
			fmt.Sprintf("printf %%s %s > %s && sync && head -c %d %s", token, blockDevicePath, len(token), blockDevicePath))
		gomega.Expect(writer.message).To(gomega.Equal(token), "writer on %s read back what it wrote through the device", writer.node)
		pv := e.waitBound(ctx, "golden")

		// The pod's claim says readOnly, so kubelet's NodePublishVolume does.
		// A privileged container is let at every device by the runtime
		// (an unprivileged one would get the device "r" only, from kubelet),
		// so only the device itself can refuse the write.
		expectWriteRefused(e.runBlockPod(ctx, "claim-read-only", pin, "golden", true, true, tryWrite(token)), token, "a privileged pod whose claim says readOnly")

		// A PV with spec.csi.readOnly used by a pod that does not say so:
		// kubelet's NodePublishVolume says read-write and grants the device
		// "mrw"; only ControllerPublishVolume (the external-attacher) hears
		// readonly, and the driver must make the node publish read-only.
		e.deletePodsAndDetach(ctx, pv.Name, "writer", "claim-read-only")
		e.createClaim(ctx, e.readOnlyCopy(ctx, pv, "golden-read-only"))
		expectWriteRefused(e.runBlockPod(ctx, "pv-read-only", pin, "golden-read-only", false, false, tryWrite(token)), token, "a pod of a PV with spec.csi.readOnly")
	})
}

// blockDevicePath is where the block specs' containers have the volume.
const blockDevicePath = "/dev/zonepath-block"

// runBlockPod runs script in a busybox container with claim as the block
// device blockDevicePath; readOnly is the pod's persistentVolumeClaim.readOnly.
func (e *env) runBlockPod(ctx context.Context, name string, selector map[string]string, claim string, readOnly, privileged bool, script string) ran {
	pod := scriptPod(name, selector, claim, script)
	pod.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly = readOnly
	c := &pod.Spec.Containers[0]
	c.VolumeDevices = []v1.VolumeDevice{{Name: pod.Spec.Volumes[0].Name, DevicePath: blockDevicePath}}
	if privileged {
		c.SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
	}
	return e.runToEnd(ctx, pod)
}

// tryWrite writes one byte over the token's first with dd and prints
// "wrote", or "refused: " and dd's stderr on one line (its error and its
// records summary); then the token's length of the device.
func tryWrite(token string) string {
	return fmt.Sprintf(`if printf X | dd of=%[1]s bs=1 count=1 conv=notrunc 2>/tmp/dd; then echo wrote; else echo "refused: $(tr '\n' ' ' </tmp/dd)"; fi
head -c %[2]d %[1]s`, blockDevicePath, len(token))
}

// expectWriteRefused: the output of tryWrite says the kernel refused the
// write, and the device still holds the token. The device's data is the
// last line: head prints no newline, and the token has none.
func expectWriteRefused(r ran, token, who string) {
	first, data := r.message, ""
	if i := strings.LastIndex(r.message, "\n"); i >= 0 {
		first, data = r.message[:i], r.message[i+1:]
	}
	framework.Logf("%s on %s: %q", who, r.node, r.message)
	refused := strings.HasPrefix(first, "refused: ") && strings.Contains(first, "dd:") &&
		(strings.Contains(first, "Operation not permitted") || strings.Contains(first, "Read-only file system") || strings.Contains(first, "Permission denied"))
	gomega.Expect(refused).To(gomega.BeTrueBecause("%s on %s: the write through %s is refused (EPERM, EROFS or EACCES): csi.proto: \"the SP MUST publish the volume in readonly mode\"; it said %q", who, r.node, blockDevicePath, first))
	gomega.Expect(data).To(gomega.Equal(token), "%s on %s reads the data the writer left", who, r.node)
}

// deletePodsAndDetach deletes the pods and waits until no
// VolumeAttachment of the PV is left: a PV with the same volume handle
// may then be attached to the node without meeting the old attachment
// (whose name, from handle, driver and node, it would share).
func (e *env) deletePodsAndDetach(ctx context.Context, pv string, pods ...string) {
	for _, p := range pods {
		framework.ExpectNoError(e2epod.DeletePodWithWaitByName(ctx, e.f.ClientSet, p, e.ns()), "deleting pod %s", p)
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		vas, err := e.f.ClientSet.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, va := range vas.Items {
			if ptr.Deref(va.Spec.Source.PersistentVolumeName, "") == pv {
				return fmt.Errorf("VolumeAttachment %s of PV %s is still there (attached %t)", va.Name, pv, va.Status.Attached)
			}
		}
		return nil
	}).WithTimeout(e.f.Timeouts.PodDelete + e.timeout()).WithPolling(poll).Should(gomega.Succeed())
}

// readOnlyCopy creates a PV for pv's volume whose spec.csi says readOnly,
// Retain (the volume stays pv's), bound in advance to a new claim name,
// deleted after the spec, and returns that claim.
func (e *env) readOnlyCopy(ctx context.Context, pv *v1.PersistentVolume, name string) *v1.PersistentVolumeClaim {
	ro := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: names.SimpleNameGenerator.GenerateName(e.ns() + "-read-only-")},
		Spec:       *pv.Spec.DeepCopy(),
	}
	ro.Spec.CSI.ReadOnly = true
	ro.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	ro.Spec.StorageClassName = ""
	ro.Spec.ClaimRef = &v1.ObjectReference{Namespace: e.ns(), Name: name}
	_, err := e.f.ClientSet.CoreV1().PersistentVolumes().Create(ctx, ro, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating the read-only PV %s", ro.Name)
	ginkgo.DeferCleanup(framework.IgnoreNotFound(e.f.ClientSet.CoreV1().PersistentVolumes().Delete), ro.Name, metav1.DeleteOptions{})
	claim := e.newClaim(name, "")
	claim.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock)
	claim.Spec.VolumeName = ro.Name
	return claim
}
