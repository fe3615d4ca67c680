// Package fakezones documents the fake-zones cluster: a real Kubernetes
// control plane (etcd, kube-apiserver, kube-controller-manager, a
// scheduler) with kwok nodes spread over regions and zones, the snapshot
// controller, the CSI sidecars and the zonepath driver, all as local
// processes built from Go modules: no Docker, no registry, ready in
// seconds.
//
// The pieces, one package each:
//
//	spec         the cluster file: regions, zones, nodes, attach limits, which nodes have the driver, extra drivers, the driver's topology settings and racks
//	pki          certificates and kubeconfigs
//	proc         child processes: start detached with a log each, stop in reverse order, leave none behind
//	objects      what is installed into the API: CRDs, CSIDriver, classes, RBAC, nodes
//	kubelet      the kubelet stand-in: node plugins in one process, registered the way kubelet would
//	cluster      up and down: the order, the readiness checks, the progress output
//	clustertest  the test kit: a cluster per test (build tag livecluster), the objects tests create, the waits
//	chaos        make chaos: a workload while components are SIGKILLed, then an orphan audit of the driver and the API
//
// The command is cmd/zonepath-cluster; make fakezones-up and make chaos
// run it.
package fakezones
