package kubelet

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// nodeWatch is the stand-in's one view of the cluster's Nodes, a shared
// informer: a Get poll per node while up creates thousands of them, or a
// watch per node that follows a label, would cost the API server far more.
type nodeWatch struct {
	lister corelisters.NodeLister
	// seen has a channel per node of the cluster, closed once the Node is
	// in the cache; changed a wake-up per followed node (capacity one: a
	// pending wake-up covers later changes). Both maps are fixed at start.
	seen    map[string]chan struct{}
	changed map[string]chan struct{}
	mu      sync.Mutex
	closed  sets.Set[string]
}

// watchNodes starts the informer; stop waits for it after ctx is done.
// followed are the nodes whose every change wakes Changed.
func watchNodes(ctx context.Context, kube kubernetes.Interface, nodes, followed []string) (w *nodeWatch, stop func(), err error) {
	factory := informers.NewSharedInformerFactory(kube, 0)
	informer := factory.Core().V1().Nodes().Informer()
	// Registration reads only these fields; kwok's status, the largest
	// part of a Node, would cost memory per node for nothing.
	if err := informer.SetTransform(slimNode); err != nil {
		return nil, nil, err
	}
	w = &nodeWatch{lister: factory.Core().V1().Nodes().Lister(), seen: map[string]chan struct{}{},
		changed: map[string]chan struct{}{}, closed: sets.New[string]()}
	for _, n := range nodes {
		w.seen[n] = make(chan struct{})
	}
	for _, n := range followed {
		w.changed[n] = make(chan struct{}, 1)
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: w.saw, UpdateFunc: func(_, obj any) { w.saw(obj) },
	}); err != nil {
		return nil, nil, err
	}
	factory.Start(ctx.Done())
	return w, factory.Shutdown, nil
}

func slimNode(obj any) (any, error) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return obj, nil // a tombstone
	}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels, Annotations: n.Annotations,
	}}, nil
}

func (w *nodeWatch) saw(obj any) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	if ch, ok := w.changed[n.Name]; ok {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	ch, ok := w.seen[n.Name]
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed.Has(n.Name) {
		w.closed.Insert(n.Name)
		close(ch)
	}
}

// wait returns the cached Node once it exists (kubelet registers its
// Node itself; here up creates it), or ctx's error.
func (w *nodeWatch) wait(ctx context.Context, name string) (*v1.Node, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-w.seen[name]:
	}
	n, err := w.lister.Get(name)
	if err != nil {
		return nil, fmt.Errorf("node %s went away before its registration: %w", name, err)
	}
	return n, nil
}

// Changed wakes on every change of a followed node.
func (w *nodeWatch) Changed(name string) <-chan struct{} { return w.changed[name] }
