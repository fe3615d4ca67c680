package resizer

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// Event reasons, upstream csi-resizer's, which users and the e2e suites
// know.
const (
	reasonResizing    = "Resizing"
	reasonFailed      = "VolumeResizeFailed"
	reasonSucceeded   = "VolumeResizeSuccessful"
	reasonNodePending = "FileSystemResizeRequired"
)

// sync brings one claim's expansion one step on. An error means: retry
// with backoff.
func (c *Controller) sync(ctx context.Context, key string) error {
	pvc, pv, err := c.objects(key)
	if err != nil || pvc == nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("pvc", klog.KObj(pvc), "pv", pv.Name)
	capacity := pvc.Status.Capacity[v1.ResourceStorage]
	request := pvc.Spec.Resources.Requests[v1.ResourceStorage]
	if request.Cmp(capacity) <= 0 {
		// Nothing to grow. A request below the capacity is no shrink
		// to refuse loudly: provisioning rounds sizes up, and the API
		// server forbids lowering a request below the capacity. A volume
		// is never shrunk.
		return nil
	}
	if ref := pv.Spec.CSI.ControllerExpandSecretRef; ref != nil {
		// Reading secrets would need a grant deploy/rbac does not give;
		// calling without them would fail in the plugin, again and again.
		c.recorder.Eventf(pvc, v1.EventTypeWarning, reasonFailed,
			"Volume %s names controllerExpandSecretRef %s/%s: zonepath-resizer does not pass secrets; use csi-resizer", pv.Name, ref.Namespace, ref.Name)
		return nil
	}
	size, skip := stateOf(pvc, pv, c.finals.has(key)).target()
	if skip != "" {
		logger.V(4).Info("No expansion", "reason", skip)
		return nil
	}
	return c.expand(ctx, key, pvc, pv, size)
}

// objects are the claim of key and its volume when the claim is bound
// to a volume of the driver; nil when there is nothing to do. A volume missing from the cache is an error: the informer may not
// have it yet.
func (c *Controller) objects(key string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume, error) {
	pvc, err := c.claims.Get(key)
	if err != nil || pvc == nil || pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, nil, err
	}
	pv, err := c.volumes.Get(pvc.Spec.VolumeName)
	if err != nil {
		return nil, nil, fmt.Errorf("volume %s of claim %s: %w", pvc.Spec.VolumeName, key, err)
	}
	if !c.ours(pv) {
		return nil, nil, nil
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID || ref.Namespace != pvc.Namespace {
		return nil, nil, nil // the binding is not complete
	}
	return pvc, pv, nil
}

// expand runs one expansion of pv to size and records it.
func (c *Controller) expand(ctx context.Context, key string, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, size resource.Quantity) error {
	pvc, err := markInProgress(c.kube, pvc, size)
	if err != nil {
		return fmt.Errorf("marking claim %s as resizing: %w", key, err)
	}
	c.recorder.Eventf(pvc, v1.EventTypeNormal, reasonResizing, "External resizer is resizing volume %s", pv.Name)
	callCtx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	got, nodeRequired, err := c.expander.Expand(callCtx, pv, size.Value())
	if err != nil {
		return c.failed(key, pvc, pv, size, err)
	}
	c.finals.remove(key)
	capacity := size // CSI requires capacity_bytes; a plugin that omits it did as asked
	if got > 0 {
		capacity = *resource.NewQuantity(got, resource.BinarySI)
	}
	if old := pv.Spec.Capacity[v1.ResourceStorage]; capacity.Cmp(old) > 0 {
		if _, err := volumeutil.UpdatePVSize(pv, capacity, c.kube); err != nil {
			return fmt.Errorf("recording capacity %s of volume %s: %w", capacity.String(), pv.Name, err)
		}
		c.volumes.wrote(pv.Name, capacity)
	}
	if nodeRequired {
		if _, err := markNodePending(c.kube, pvc); err != nil {
			return fmt.Errorf("marking claim %s for node expansion: %w", key, err)
		}
		c.recorder.Event(pvc, v1.EventTypeNormal, reasonNodePending, "Require file system resize of volume on node")
		return nil
	}
	if _, err := markFinished(c.kube, pvc, capacity); err != nil {
		return fmt.Errorf("marking claim %s as resized: %w", key, err)
	}
	c.recorder.Event(pvc, v1.EventTypeNormal, reasonSucceeded, "Resize volume succeeded")
	return nil
}

// failed records a failed expansion and says whether to retry: an
// infeasible size is not retried (the claim's next update with another
// request is), the rest is, with backoff.
func (c *Controller) failed(key string, pvc *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, size resource.Quantity, err error) error {
	kind := classify(err)
	msg := fmt.Sprintf("resize volume %s to %s failed: %v", pv.Name, size.String(), err)
	if kind == infeasible {
		msg += "; this is final: the volume is not expanded to this size again until the claim's requested size is changed"
	}
	c.recorder.Event(pvc, v1.EventTypeWarning, reasonFailed, msg)
	if kind == inProgress {
		c.finals.remove(key)
		return fmt.Errorf("%s", msg)
	}
	c.finals.add(key)
	if _, werr := markFailed(c.kube, pvc, kind == infeasible, err); werr != nil {
		return fmt.Errorf("%s; recording it on the claim: %w", msg, werr)
	}
	if kind == infeasible {
		return nil
	}
	return fmt.Errorf("%s", msg)
}
