package schedbench

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// cleanup deletes the round's pods (at once: kwok runs no containers),
// claims and volumes, and waits until they are gone, so that the next
// round starts on an empty cluster. Claims and volumes keep their
// protection finalizers until kube-controller-manager, at its 20 writes a
// second, removes them; the benchmark removes them itself, or cleaning up
// would take minutes and its writes would overlap the next round.
func (b *bench) cleanup(ctx context.Context) error {
	owned := metav1.ListOptions{LabelSelector: ownedLabel + "=true," + phaseLabel}
	core := b.Kube.CoreV1()
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	if err := core.Pods(b.Namespace).DeleteCollection(ctx, now, owned); err != nil {
		return fmt.Errorf("deleting pods: %w", err)
	}
	claims := core.PersistentVolumeClaims(b.Namespace)
	if err := claims.DeleteCollection(ctx, metav1.DeleteOptions{}, owned); err != nil {
		return fmt.Errorf("deleting claims: %w", err)
	}
	volumes := metav1.ListOptions{LabelSelector: volumeLabel + "=true"}
	if err := core.PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{}, volumes); err != nil {
		return fmt.Errorf("deleting volumes: %w", err)
	}
	noFinalizers := []byte(`{"metadata":{"finalizers":null}}`)
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := core.Pods(b.Namespace).List(ctx, owned)
		if err != nil {
			return false, nil
		}
		pvcs, err := claims.List(ctx, owned)
		if err != nil {
			return false, nil
		}
		pvs, err := core.PersistentVolumes().List(ctx, volumes)
		if err != nil {
			return false, nil
		}
		// Only once the pods are gone: a claim in use must stay.
		if len(pods.Items) == 0 {
			if err := parallel(ctx, len(pvcs.Items), b.Workers, func(i int) error {
				_, err := claims.Patch(ctx, pvcs.Items[i].Name, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
				return ignoreNotFound(err)
			}); err != nil {
				return false, err
			}
		}
		if len(pvcs.Items) == 0 {
			if err := parallel(ctx, len(pvs.Items), b.Workers, func(i int) error {
				_, err := core.PersistentVolumes().Patch(ctx, pvs.Items[i].Name, types.MergePatchType, noFinalizers, metav1.PatchOptions{})
				return ignoreNotFound(err)
			}); err != nil {
				return false, err
			}
		}
		return len(pods.Items)+len(pvcs.Items)+len(pvs.Items) == 0, nil
	})
}

// ignoreNotFound: an object that is already gone is what cleanup wants.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
