package cluster

import (
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodelease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// kwokStages is kwok's configuration: the node and pod stages that ship in
// the kwok module (the ones kwokctl uses), so nodes become Ready at once
// and keep their leases, and pods run, complete and go away.
func kwokStages() string {
	return strings.Join([]string{
		nodefast.DefaultNodeInit, nodelease.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete,
	}, "\n---\n")
}
