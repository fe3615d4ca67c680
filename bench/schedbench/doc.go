// Package schedbench is make bench-scheduler: it measures what the
// SnapshotTopology plugin costs the scheduler (issue 14), in the manner
// of kube-scheduler's scheduler_perf: pods scheduled per second and p99
// scheduling latency of zonepath-scheduler with the plugin against
// upstream kube-scheduler with the same profile minus the plugin, on one
// fake-zones cluster in one run, and checks the targets.
//
// It owns the workload (plain pods, pods with a claim restored from a
// snapshot), a binder that plays provisioner and PV controller for both
// schedulers alike, the scheduler processes, their /metrics histograms
// and the verdict. It must time schedulers only: no driver or provisioner
// of zonepath's is in the path, and both schedulers get the same work.
// The livecluster benchmark in bench_test.go starts the cluster and calls
// Nodes and Run; bench/README.md says how a run is timed and why.
package schedbench
