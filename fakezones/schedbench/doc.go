// Package schedbench measures what the SnapshotTopology plugin costs the
// scheduler (issue 14), in the manner of kube-scheduler's scheduler_perf:
// pods scheduled per second and p99 scheduling latency, for
// zonepath-scheduler with the plugin against upstream kube-scheduler with
// the same profile minus the plugin, on one fake-zones cluster in one run.
//
// Each round runs each scheduler in turn (A, B, A, B, ...) through two
// phases, each its own scheduler process with a profile of its own name:
// the pods of the phase are created first, then the scheduler is started
// and timed through the backlog, from the first pod that gets a node to
// the last (so the rate at which the benchmark creates pods does not
// count). The plain phase has pods without volumes; the snapshot phase
// has pods with a WaitForFirstConsumer claim restored from a
// VolumeSnapshot that the cluster's real snapshotter took, with zonal or
// regional topology. Latency comes from the scheduler's own histograms
// (AlgorithmMetric, AttemptMetric), read from its /metrics at the end of
// the phase.
//
// The claims' StorageClass names a provisioner nobody serves; the Binder
// plays provisioner and PV controller for both schedulers alike, so the
// benchmark measures schedulers rather than provisioners. It also proves
// that the plugin was at work: with it, every snapshot pod must land
// inside its snapshot's topology.
//
// The cluster side is the livecluster benchmark in bench_test.go (make
// bench-scheduler); the rest is plain code with unit tests.
package schedbench
