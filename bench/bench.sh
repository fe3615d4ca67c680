#!/usr/bin/env bash
# make bench: the driver over its CSI socket against the null driver
# (bench/csibench, bench/nulldriver), then the SnapshotTopology scheduler
# plugin's Filter; fails when a target is missed. What each measures, the
# targets and the latest figures: bench/README.md. Output also in
# _output/bench.txt (csibench) and _output/bench-filter.txt (Filter).
# CSIBENCH_FLAGS adds csibench flags (e.g. "--create-ops 3000 --list-time 3s").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

mkdir -p _output/bench
OUT=_output/bench.txt
go build -o _output/bench/zonepath ./driver/cmd/zonepath
go build -o _output/bench/nulldriver ./bench/cmd/nulldriver
echo "+ csibench (load: $(cut -d' ' -f1-3 /proc/loadavg))" | tee "$OUT"
# shellcheck disable=SC2086 # CSIBENCH_FLAGS is a list of flags
go run ./bench/cmd/csibench --driver _output/bench/zonepath --null-driver _output/bench/nulldriver \
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
