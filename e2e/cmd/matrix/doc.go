// Command matrix is make conformance-matrix: zonepath-sanity and the e2e
// suite (bin/zonepath-e2e) for every driver personality under
// e2e/testdata/personalities/ (issue 21), each on a fake-zones cluster,
// and one table personality → sanity and e2e passed/failed/skipped, wall
// time, with every skip and the capability that explains it.
//
// Personalities that name the same cluster: share one cluster, brought up
// once from that personality's cluster.yaml and always brought down, also
// on a failure or Ctrl-C. Per personality it runs zonepath-sanity against
// its driver's controller socket and the node plugin of a node in the
// first segment of its sanity.yaml (as hack/conformance.sh step 3 does),
// then the e2e suite with its driver.yaml and ext.yaml (step 4).
//
// It fails on any failed spec, any run that could not say anything (a
// cluster that did not come up, a suite that wrote no JUnit), and on any
// skip whose reason is not a capability the personality lacks: a skip is
// explained only through the classifier's vocabulary (capabilities.go),
// never by a spec's name. A personality with a faultRules.yaml also fails
// when, during its e2e run, no rule of some match.rpc fired: the faults
// are counted from the controller's log and printed by RPC.
//
//	go run ./e2e/cmd/matrix --bin-dir bin --output-dir _output/conformance-matrix --only prefixed,zone-only
package main
