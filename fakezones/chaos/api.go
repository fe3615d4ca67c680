package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// stepTimeout bounds one step of a cycle (a claim bound, a snapshot
// ready): long enough for a few kills of the components it needs on a
// loaded machine, short enough for the run to go on without it.
const stepTimeout = 2 * time.Minute

// api reads and waits for the workload's objects. Every read retries:
// kube-apiserver and etcd are killed under it.
type api struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// poll calls cond every half second until it is done, an error from it
// ends the wait, or stepTimeout passes.
func poll(ctx context.Context, cond func(context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, stepTimeout, true, cond)
}

// boundPV waits until the claim is Bound and returns its PV. stop, when
// set, ends the wait early with its error when it sees the claim will not
// bind.
func (a *api) boundPV(ctx context.Context, name string, stop func() error) (*v1.PersistentVolume, error) {
	var pv *v1.PersistentVolume
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		pvc, err := a.kube.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pvc.Status.Phase != v1.ClaimBound || pvc.Spec.VolumeName == "" {
			if stop != nil {
				return false, stop()
			}
			return false, nil
		}
		pv, err = a.kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s not bound: %w%s", name, err, a.claimEvents(name))
	}
	return pv, nil
}

// claimEvents are the Warning events of a claim, for failure messages.
func (a *api) claimEvents(name string) string {
	msgs := a.warnings(name)
	if len(msgs) == 0 {
		return ""
	}
	return "; its last warning: " + msgs[len(msgs)-1]
}

// warnings lists the messages of the Warning events of the object name
// in Namespace.
func (a *api) warnings(name string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	events, err := a.kube.CoreV1().Events(Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range events.Items {
		if e.Type == v1.EventTypeWarning {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// readyContent waits until the VolumeSnapshot is ReadyToUse and returns
// its content. stop, when set, ends the wait early with its error when it
// sees the snapshot will not become ready.
func (a *api) readyContent(ctx context.Context, name string, stop func(vs *unstructured.Unstructured) error) (*unstructured.Unstructured, error) {
	var content *unstructured.Unstructured
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		vs, err := a.resource(kindSnapshot).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
		bound, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
		if !ready || bound == "" {
			if stop != nil {
				return false, stop(vs)
			}
			return false, nil
		}
		content, err = a.resource(kindContent).Get(ctx, bound, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s not ready: %w", name, err)
	}
	return content, nil
}

// snapshotError is the VolumeSnapshot's status.error message.
func snapshotError(vs *unstructured.Unstructured) string {
	msg, _, _ := unstructured.NestedString(vs.Object, "status", "error", "message")
	return msg
}

// contentOf is the VolumeSnapshot's content, or nil while it has none.
func (a *api) contentOf(ctx context.Context, vs string) *unstructured.Unstructured {
	s, err := a.resource(kindSnapshot).Get(ctx, vs, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	name, _, _ := unstructured.NestedString(s.Object, "status", "boundVolumeSnapshotContentName")
	if name == "" {
		return nil
	}
	c, err := a.resource(kindContent).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return c
}

func snapshotHandle(content *unstructured.Unstructured) string {
	h, _, _ := unstructured.NestedString(content.Object, "status", "snapshotHandle")
	return h
}

// create makes an object, retrying while the API server is away; an
// object already there (a retry after a lost reply) is fine.
func create(ctx context.Context, what string, f func(context.Context) error) error {
	var last error
	err := poll(ctx, func(ctx context.Context) (bool, error) {
		last = f(ctx)
		if last == nil || apierrors.IsAlreadyExists(last) {
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("creating %s: %w (last error: %v)", what, err, last)
	}
	return nil
}

// hasWord says whether any of msgs holds word, case-insensitively.
func hasWord(msgs []string, word string) bool {
	for _, m := range msgs {
		if strings.Contains(strings.ToLower(m), strings.ToLower(word)) {
			return true
		}
	}
	return false
}
