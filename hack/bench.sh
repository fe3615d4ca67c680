#!/usr/bin/env bash
# make bench: the driver over its CSI socket (hack/csibench), then the
# SnapshotTopology scheduler plugin's Filter.
#
# csibench runs bin/zonepath and hack/nulldriver (the same RPCs answered
# from precomputed responses of the same shapes: the transport's limit
# here) as processes, at 1k and 10k volumes+snapshots and concurrency 1
# and 8, one shared client connection per driver. It prints ops/s, p50 and
# p99 of CreateVolume, DeleteVolume, CreateSnapshot, DeleteSnapshot and
# complete paged ListVolumes/ListSnapshots (max_entries=100) beside the
# null driver's, and checks (hack/csibench/report.go):
#   - a complete listing at 10k costs zonepath <= 1.5x the null driver;
#   - zonepath's cost per listed entry at 10k <= 1.5x its cost at 1k;
#   - CreateVolume and CreateSnapshot at 10k objects >= 700/s at
#     concurrency 1 and >= 1,500/s at concurrency 8 (every write fsynced).
# Its output goes to _output/bench.txt too. CSIBENCH_FLAGS adds flags
# (e.g. "--create-ops 3000 --list-time 3s"). The in-process benchmarks of
# driver/plugin/bench_test.go are for profiling (go test -cpuprofile);
# this script no longer runs them.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

mkdir -p _output/bench
OUT=_output/bench.txt
go build -o _output/bench/zonepath ./driver/cmd/zonepath
go build -o _output/bench/nulldriver ./hack/nulldriver
echo "+ csibench (load: $(cut -d' ' -f1-3 /proc/loadavg))" | tee "$OUT"
# shellcheck disable=SC2086 # CSIBENCH_FLAGS is a list of flags
go run ./hack/csibench --driver _output/bench/zonepath --null-driver _output/bench/nulldriver \
	${CSIBENCH_FLAGS:-} 2>&1 | tee -a "$OUT" || result=1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"

# The SnapshotTopology scheduler plugin: Filter over 5,000 nodes (3 regions x
# 10 zones) for pods with 1, 3 and 10 snapshot-sourced PVCs. Its check, against
# pvcs=1 in the same run: 10 PVCs cost at most 10x one, i.e. Filter's work
# grows no faster than the number of snapshot constraints.
FILTER_OUT=_output/bench-filter.txt
echo
echo "+ go test -run '^\$' -bench '^BenchmarkFilter$' -benchmem ./controllers/scheduler/snapshottopology/" | tee "$FILTER_OUT"
go test -run '^$' -bench '^BenchmarkFilter$' -benchmem ./controllers/scheduler/snapshottopology/ 2>&1 | tee -a "$FILTER_OUT" |
	grep -E '^(Benchmark|--- FAIL|FAIL|panic)' || result=1
awk '
/^BenchmarkFilter\/pvcs=/ {
	split($1, a, "="); sub(/-[0-9]+$/, "", a[2]); n = a[2]
	for (i = 2; i <= NF; i++) if ($(i+1) == "ns/op") ns[n] = $i
}
END {
	print ""
	print "SnapshotTopology Filter over 5,000 nodes:"
	if (!(1 in ns)) { print "RESULT: FAIL (no pvcs=1 result)"; exit 1 }
	failed = 0
	for (n = 1; n <= 10; n++) {
		if (!(n in ns)) continue
		ok = ns[n] / ns[1] <= n
		if (!ok) failed++
		printf "  pvcs=%-3d %12.0f ns/op %8.1f ns/node  %5.2fx pvcs=1  %s (<= %dx)\n", n, ns[n], ns[n] / 5000, ns[n] / ns[1], ok ? "ok" : "FAIL", n
	}
	if (failed) { print "RESULT: FAIL"; exit 1 }
	print "RESULT: PASS"
}' "$FILTER_OUT" || result=1
exit "${result:-0}"
