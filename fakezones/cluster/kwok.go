package cluster

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodelease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	configv1alpha1 "sigs.k8s.io/kwok/pkg/apis/config/v1alpha1"
)

// kwokOptions raises kwok's workers from their default of 4: four at a
// time, making a thousand new nodes Ready took seconds longer than the API
// server needs for their status patches. kwok applies no defaults to a
// configuration it reads, so this one has them set.
func kwokOptions() string {
	c := configv1alpha1.KwokConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: configv1alpha1.GroupVersion.String(), Kind: configv1alpha1.KwokConfigurationKind},
		Options:  configv1alpha1.KwokConfigurationOptions{NodePlayStageParallelism: 16, NodeLeaseParallelism: 16},
	}
	configv1alpha1.SetObjectDefaults_KwokConfiguration(&c)
	return string(mustYAML(c))
}

// kwokStages is kwok's configuration: its options and the node and pod
// stages that ship in the kwok module (the ones kwokctl uses), so nodes
// become Ready at once and keep their leases, and pods run, complete and
// go away.
func kwokStages() string {
	return strings.Join([]string{
		kwokOptions(),
		nodefast.DefaultNodeInit, nodelease.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete,
	}, "\n---\n")
}
