// Package cluster brings a fake-zones cluster up and down: certificates,
// etcd, kube-apiserver, then every other component at once, the objects
// the cluster needs, and readiness checks that fail fast with the log of
// whichever component died. Every started process is recorded in the
// work directory's cluster.json as soon as it starts, so a failed or
// interrupted start, and any later "down", stop exactly what was started.
//
// It must not build the cluster's API objects itself (package objects does;
// only --rbac's deploy/rbac objects are applied here, as rendered) nor know
// how a process is started or stopped (package proc does).
package cluster
