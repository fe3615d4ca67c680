package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// nodeFromLabels reads the node's segment from its Node object, the way a
// cloud driver learns its zone from the platform.
func nodeFromLabels(ctx context.Context, kubeconfig, nodeID string, topo *world.Topology) (plugin.NodeLocation, error) {
	// QPS and burst 0: client-go's defaults, for one read at start.
	cfg, err := bootstrap.RESTConfig(kubeconfig, 0, 0)
	if err != nil {
		return plugin.NodeLocation{}, fmt.Errorf("--node-topology-from-labels: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return plugin.NodeLocation{}, err
	}
	node, err := client.CoreV1().Nodes().Get(ctx, nodeID, metav1.GetOptions{})
	if err != nil {
		return plugin.NodeLocation{}, fmt.Errorf("reading Node %s: %w", nodeID, err)
	}
	labels := map[string]string{}
	for _, k := range topo.NodeLabelKeys() {
		if v, ok := node.Labels[k]; ok {
			labels[k] = v
		}
	}
	zone, rack, err := topo.FindSegment(labels)
	if err != nil {
		return plugin.NodeLocation{}, fmt.Errorf("Node %s: %w", nodeID, err)
	}
	return plugin.NodeLocation{Zone: zone, Rack: rack}, nil
}
