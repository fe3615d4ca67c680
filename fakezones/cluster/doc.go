// Package cluster brings a fake-zones cluster up and down: certificates,
// etcd, kube-apiserver, then every other component at once, the objects
// the cluster needs, and readiness checks that fail fast with the log of
// whichever component died. Every started process is recorded in the
// work directory's cluster.json as soon as it starts, so a failed or
// interrupted start, and any later "down", stop exactly what was started.
// A chaos run (package chaos) kills one component (Kill) and starts it
// again from its record (Respawn), in its old place in the stop order.
// up ends with the peak resident memory of the cluster's processes.
// SetZone takes a zone of a running cluster down and back up (zone.go):
// an outage rule in the controller's outage file (a second fault file in
// the work directory; the user's is never written), and the zone's kwok
// nodes NotReady.
//
// The components' flags keep a start of thousands of nodes cheap: the API
// server has no TaintNodesByCondition (Nodes are created Ready), the
// controller manager no TTL controller, kwok's node leases last a tenth of
// a second per node (at least kubelet's 40 s) and the node monitor grace
// period 10 s more, and kwok has 16 node workers. Each choice says why
// beside the flag.
//
// It must not build the cluster's API objects itself (package objects does;
// only --rbac's deploy/rbac objects are applied here, as rendered) nor know
// how a process is started or stopped (package proc does).
package cluster
