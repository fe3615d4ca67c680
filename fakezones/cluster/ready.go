package cluster

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"

	"github.com/zonepath/zonepath/fakezones/spec"
)

// ready waits for every node to be Ready, every CSINode the cluster file
// asks for to exist, every node plugin registered at start to be in its
// CSINode, and the default service account, without which no pod can be
// created. It counts from informers: a List of thousands of Nodes and
// CSINodes every 50 ms would cost the API server more than the nodes do.
func (u *up) ready(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(u.clients.Kube, 0)
	nodes, csiNodes := factory.Core().V1().Nodes(), factory.Storage().V1().CSINodes()
	// Only what is counted: a Node's status is most of it.
	if err := nodes.Informer().SetTransform(readyOnly); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); factory.Shutdown() }()
	_ = csiNodes.Informer()
	factory.Start(ctx.Done())
	want := wantedReadiness(u.o.Cluster)
	var got readiness
	err := u.waitFor(ctx, u.state.Processes, func(ctx context.Context) (bool, error) {
		nodeList, _ := nodes.Lister().List(labels.Everything())
		csiNodeList, _ := csiNodes.Lister().List(labels.Everything())
		got = countReadiness(nodeList, csiNodeList, u.o.Cluster)
		if got != want {
			u.progress(got.String(want))
			return false, nil
		}
		u.progress("every node Ready and registered; waiting for the default service account")
		_, err := u.clients.Kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		if got == want {
			return fmt.Errorf("%w (no default service account yet)", err)
		}
		return fmt.Errorf("%w (%s)", err, got.String(want))
	}
	return nil
}

// readiness is how far a start is, or is to go.
type readiness struct{ ready, csiNodes, registered int }

func (r readiness) String(of readiness) string {
	return fmt.Sprintf("%d of %d nodes Ready, %d of %d CSINodes, %d of %d nodes' plugins registered",
		r.ready, of.ready, r.csiNodes, of.csiNodes, r.registered, of.registered)
}

// wantedReadiness is the readiness of a started cluster.
func wantedReadiness(cl *spec.Cluster) readiness {
	r := readiness{ready: len(cl.Nodes)}
	for _, n := range cl.Nodes {
		if n.Registration != spec.NoCSINode {
			r.csiNodes++
		}
		if n.RegistersAtStart() {
			r.registered++
		}
	}
	return r
}

// countReadiness counts the Ready nodes, the CSINodes of the cluster's
// nodes that should have one, and those of nodes registered at start that
// list every driver.
func countReadiness(nodes []*v1.Node, csiNodes []*storagev1.CSINode, cl *spec.Cluster) readiness {
	var r readiness
	for _, node := range nodes {
		if slices.ContainsFunc(node.Status.Conditions, isReady) {
			r.ready++
		}
	}
	byName := make(map[string]spec.Node, len(cl.Nodes))
	for _, n := range cl.Nodes {
		byName[n.Name] = n
	}
	drivers := cl.Drivers()
	for _, cn := range csiNodes {
		n, ok := byName[cn.Name]
		if !ok || n.Registration == spec.NoCSINode {
			continue
		}
		r.csiNodes++
		if n.RegistersAtStart() && hasDrivers(cn, drivers) {
			r.registered++
		}
	}
	return r
}

func isReady(c v1.NodeCondition) bool { return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue }

func hasDrivers(cn *storagev1.CSINode, names []string) bool {
	for _, name := range names {
		if !slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == name }) {
			return false
		}
	}
	return true
}

// readyOnly keeps of a Node its name and Ready condition.
func readyOnly(obj any) (any, error) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return obj, nil // a tombstone
	}
	slim := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Namespace: n.Namespace, ResourceVersion: n.ResourceVersion}}
	if i := slices.IndexFunc(n.Status.Conditions, isReady); i >= 0 {
		slim.Status.Conditions = []v1.NodeCondition{n.Status.Conditions[i]}
	}
	return slim, nil
}
