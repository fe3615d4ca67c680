package e2e

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"
	"k8s.io/utils/ptr"
)

// labelSharedAccess: a volume published to several nodes at once.
const labelSharedAccess = "shared-access"

// refusalHeld is how long a refused attach must stay refused: the
// external-attacher retries a failed ControllerPublishVolume with backoff,
// and a driver that gives in on a retry publishes outside the topology.
const refusalHeld = 15 * time.Second

func defineSharedAccess(e *env) {
	label := ginkgo.Label(labelSharedAccess)

	ginkgo.It("scenario 24: attaches a ReadWriteMany volume to two nodes inside its topology at once, and to no node outside it", label, func(ctx context.Context) {
		if !e.driver.GetDriverInfo().Capabilities[storageframework.CapRWX] {
			e2eskipper.Skipf("driver file: DriverInfo.Capabilities.RWX is not true: the driver publishes no volume to several nodes")
		}
		e.needAttach(ctx)
		// An Immediate claim in segments[0], ReadWriteMany: the external-
		// attacher asks for MULTI_NODE_MULTI_WRITER.
		class := e.storageClass(ctx, storagev1.VolumeBindingImmediate, terms(e.segment(0)))
		claim := e.newClaim("s24", class)
		claim.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		e.createClaim(ctx, claim)
		pv := e.waitBound(ctx, claim.Name)
		inside, outside := e.driverNodesBy(ctx, pv)
		if len(inside) < 2 {
			e2eskipper.Skipf("needs two nodes whose CSINode lists the driver inside the volume's nodeAffinity %s; found %v", pvAffinity(pv), inside)
		}
		// VolumeAttachments as the attach-detach controller makes them for
		// two pods on two nodes: the attacher's ControllerPublishVolume is
		// the driver's judgement, whatever kubelet then mounts.
		for _, node := range inside[:2] {
			e.expectAttached(ctx, e.attach(ctx, pv.Name, node), node)
		}
		if len(outside) == 0 {
			framework.Logf("WARN every node with the driver is inside the volume's nodeAffinity %s: the refusal outside it is not checked", pvAffinity(pv))
			return
		}
		// CSI ControllerPublishVolume: a volume is published to a node it
		// is accessible from (accessible_topology, spec.md "Volume"); the
		// error table names no code for a node outside it, so any refusal
		// passes, and only attached:true fails. Every node outside: a
		// driver may publish beyond what it reported in one zone only.
		refused := make(map[string]string, len(outside))
		for _, node := range outside {
			refused[node] = e.attach(ctx, pv.Name, node)
		}
		e.expectAttachesRefused(ctx, refused)
	})
}

// needAttach skips for a driver whose CSIDriver says attachRequired:
// false: no attacher calls its ControllerPublishVolume, so a
// VolumeAttachment says nothing of it (NFS-like drivers share volumes
// without one).
func (e *env) needAttach(ctx context.Context) {
	name := e.driver.GetDriverInfo().Name
	d, err := e.f.ClientSet.StorageV1().CSIDrivers().Get(ctx, name, metav1.GetOptions{})
	framework.ExpectNoError(err, "reading CSIDriver %s", name)
	if d.Spec.AttachRequired != nil && !*d.Spec.AttachRequired {
		e2eskipper.Skipf("CSIDriver %s has attachRequired: false: no ControllerPublishVolume to judge", name)
	}
}

// driverNodesBy splits the schedulable nodes whose CSINode lists the
// driver into those the volume's nodeAffinity admits and the others,
// each sorted by name.
func (e *env) driverNodesBy(ctx context.Context, pv *v1.PersistentVolume) (inside, outside []string) {
	driver := e.driver.GetDriverInfo().Name
	for _, n := range e.schedulableNodes(ctx) {
		cn, err := e.f.ClientSet.StorageV1().CSINodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil || !slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver }) {
			continue
		}
		if pvMatches(pv, n.Labels) {
			inside = append(inside, n.Name)
		} else {
			outside = append(outside, n.Name)
		}
	}
	slices.Sort(inside)
	slices.Sort(outside)
	return inside, outside
}

// attach creates a VolumeAttachment of the PV to node, detached and
// deleted after the spec (before the claim: cleanups run in reverse).
func (e *env) attach(ctx context.Context, pv, node string) string {
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: names.SimpleNameGenerator.GenerateName(e.ns() + "-")},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: e.driver.GetDriverInfo().Name,
			NodeName: node,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)},
		},
	}
	client := e.f.ClientSet.StorageV1().VolumeAttachments()
	_, err := client.Create(ctx, va, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating VolumeAttachment of %s to %s", pv, node)
	ginkgo.DeferCleanup(func(ctx context.Context) {
		err := client.Delete(ctx, va.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		framework.ExpectNoError(err, "deleting VolumeAttachment %s", va.Name)
		// The attacher's finalizer holds it until ControllerUnpublishVolume.
		gone := pollUntil(ctx, e.timeout(), func(ctx context.Context) (bool, error) {
			_, err := client.Get(ctx, va.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		gomega.Expect(gone).To(gomega.BeTrueBecause("VolumeAttachment %s of %s to %s is detached and gone within %v", va.Name, pv, node, e.timeout()))
	})
	return va.Name
}

// expectAttached waits for the VolumeAttachment to be attached; a
// timeout names the attach error the attacher recorded.
func (e *env) expectAttached(ctx context.Context, name, node string) {
	var last *storagev1.VolumeAttachment
	attached := pollUntil(ctx, e.timeout(), func(ctx context.Context) (bool, error) {
		va, err := e.f.ClientSet.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
		last = va
		return err == nil && va.Status.Attached, err
	})
	if !attached {
		framework.Failf("VolumeAttachment %s to node %s (inside the volume's topology) is not attached after %v: %s\n  points at: the CSI driver's ControllerPublishVolume (or the external-attacher)",
			name, node, e.timeout(), attachState(last))
	}
}

// expectAttachesRefused waits until the attacher recorded an attach
// error on each VolumeAttachment (node → name) and checks that none is
// attached for refusalHeld after that.
func (e *env) expectAttachesRefused(ctx context.Context, vas map[string]string) {
	get := func(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
		return e.f.ClientSet.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	}
	for _, node := range sortedKeys(vas) {
		var last *storagev1.VolumeAttachment
		decided := pollUntil(ctx, e.timeout(), func(ctx context.Context) (bool, error) {
			va, err := get(ctx, vas[node])
			last = va
			return err == nil && (va.Status.Attached || va.Status.AttachError != nil), err
		})
		if !decided {
			framework.Failf("VolumeAttachment %s to node %s (outside the volume's topology) has neither an attach error nor attached after %v: %s", vas[node], node, e.timeout(), attachState(last))
		}
	}
	gomega.Consistently(ctx, func(ctx context.Context) ([]string, error) {
		var attached []string
		for _, node := range sortedKeys(vas) {
			va, err := get(ctx, vas[node])
			if err != nil {
				return nil, err
			}
			if va.Status.Attached {
				attached = append(attached, node)
			}
		}
		return attached, nil
	}).WithTimeout(refusalHeld).WithPolling(time.Second).Should(gomega.BeEmpty(),
		"nodes outside the volume's topology the driver published it to (points at: the CSI driver's ControllerPublishVolume)")
	first := sortedKeys(vas)[0]
	va, err := get(ctx, vas[first])
	framework.ExpectNoError(err)
	framework.Logf("attaches to %v, outside the volume's topology, refused; %s: %s", sortedKeys(vas), first, attachState(va))
}

// attachState is what a VolumeAttachment says of its attach.
func attachState(va *storagev1.VolumeAttachment) string {
	switch {
	case va == nil:
		return "not found"
	case va.Status.AttachError != nil:
		return fmt.Sprintf("attached %t, attach error %q", va.Status.Attached, va.Status.AttachError.Message)
	default:
		return fmt.Sprintf("attached %t, no attach error", va.Status.Attached)
	}
}
