package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

// nodeFromLabels reads the node's segment from its Node object, the way a
// cloud driver learns its zone from the platform.
func nodeFromLabels(ctx context.Context, kubeconfig, nodeID string, topo *world.Topology) (plugin.NodeLocation, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
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
	for _, k := range []string{topo.Keys.Region, topo.Keys.Zone, topo.Keys.Rack} {
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
