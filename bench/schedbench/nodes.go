package schedbench

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// startupTaints are the taints a node gets while it is not Ready: the
// API server adds not-ready to every new node, and kube-controller-manager
// removes it once the node is Ready.
var startupTaints = []string{v1.TaintNodeNotReady, v1.TaintNodeUnreachable}

// Nodes are the labels of every node, by name, once no Ready node carries
// a startup taint any more. kube-controller-manager lifts those at its 20
// writes a second, minutes after 5,000 nodes are Ready; until then most
// nodes are tainted, and pods confined to a zone (the snapshot pods with
// the plugin) go unschedulable where the others just go elsewhere. So
// Nodes lifts them itself, as the controller would, workers at a time.
func Nodes(ctx context.Context, kube kubernetes.Interface, workers int) (map[string]labels.Set, error) {
	var out map[string]labels.Set
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		var tainted []string
		out = map[string]labels.Set{}
		for _, n := range list.Items {
			out[n.Name] = n.Labels
			if ready(&n) && slices.ContainsFunc(n.Spec.Taints, isStartupTaint) {
				tainted = append(tainted, n.Name)
			}
		}
		return len(tainted) == 0, parallel(ctx, len(tainted), workers, func(i int) error {
			return untaint(ctx, kube, tainted[i])
		})
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for nodes without startup taints: %w", err)
	}
	return out, nil
}

func isStartupTaint(t v1.Taint) bool { return slices.Contains(startupTaints, t.Key) }

func ready(n *v1.Node) bool {
	i := slices.IndexFunc(n.Status.Conditions, func(c v1.NodeCondition) bool { return c.Type == v1.NodeReady })
	return i >= 0 && n.Status.Conditions[i].Status == v1.ConditionTrue
}

// untaint removes the startup taints of a node, guarded by its
// resourceVersion: a node that changed meanwhile is left to the next
// poll.
func untaint(ctx context.Context, kube kubernetes.Interface, name string) error {
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ignoreNotFound(err)
	}
	kept := slices.DeleteFunc(slices.Clone(n.Spec.Taints), isStartupTaint)
	patch := mergePatch(map[string]any{
		"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
		"spec":     map[string]any{"taints": kept},
	})
	_, err = kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsConflict(err) {
		return nil
	}
	return ignoreNotFound(err)
}
