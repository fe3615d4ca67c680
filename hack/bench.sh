#!/usr/bin/env bash
# Runs the controller benchmarks of driver/plugin/bench_test.go once, saves
# the raw `go test -bench` output to _output/bench.txt and checks the
# targets of issue "Must show 4":
#   - cost per operation does not grow with the number of objects:
#     cost(10k)/cost(1k) = ops/s(1k)/ops/s(10k) <= 1.5, per RPC and concurrency;
#   - at 10k objects, >= 660 CreateVolume/s and >= 80 complete
#     ListSnapshots/s (every snapshot, pages of max_entries=100), judged on
#     the better of concurrency 1 and 8 (both are printed);
#   - concurrency 8 is faster than concurrency 1 (at 10k objects).
# Exits non-zero when a benchmark fails or a target is missed.
#
# Creates run a fixed number of operations (CREATE_BENCHTIME, default
# 2000x); listings are much longer operations (100 RPCs each at 10k) and
# run LIST_BENCHTIME (default 50x) complete listings.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

CREATE_BENCHTIME=${CREATE_BENCHTIME:-2000x}
LIST_BENCHTIME=${LIST_BENCHTIME:-50x}
OUT=_output/bench.txt

mkdir -p _output
: >"$OUT"

status=0
run() {
	local pattern=$1 benchtime=$2
	echo "+ go test -run '^\$' -bench '$pattern' -benchtime $benchtime ./driver/plugin/" | tee -a "$OUT"
	# Show result lines as they come; everything goes to $OUT.
	go test -run '^$' -bench "$pattern" -benchtime "$benchtime" -timeout 30m ./driver/plugin/ 2>&1 |
		tee -a "$OUT" |
		awk '/^Benchmark.*ns\/op/ || /^(--- FAIL|FAIL|panic)/ { print; fflush() }' ||
		status=1
}

start=$(date +%s)
run '^Benchmark(CreateVolume|CreateSnapshot)$' "$CREATE_BENCHTIME"
run '^BenchmarkListSnapshots$' "$LIST_BENCHTIME"
echo "benchmarks took $(($(date +%s) - start))s; raw output in $OUT"
echo

awk -v runstatus="$status" '
function val(rpc, n, c) { k = rpc SUBSEP n SUBSEP c; return (k in ops) ? ops[k] + 0 : "" }
function fmt(v) { return v == "" ? "-" : sprintf("%.1f", v) }
function verdict(ok) { if (!ok) failed++; return ok ? "PASS" : "FAIL" }

/^Benchmark[A-Za-z]+\/objects=[0-9]+\/conc=[0-9]+(-[0-9]+)?[ \t]/ {
	name = $1
	sub(/-[0-9]+$/, "", name)
	split(name, part, "/")
	rpc = substr(part[1], 10)
	n = substr(part[2], 9)
	c = substr(part[3], 6)
	for (i = 2; i < NF; i++) {
		if ($(i + 1) == "ops/s") ops[rpc, n, c] = $i
		if ($(i + 1) == "ns/page") nspage[rpc, n, c] = $i
	}
}

END {
	split("CreateVolume CreateSnapshot ListSnapshots", rpcs, " ")
	split("1 8", concs, " ")
	lo = 1000; hi = 10000
	failed = 0

	printf "%-15s %4s %12s %12s %15s\n", "RPC", "conc", "ops/s@1k", "ops/s@10k", "cost10k/cost1k"
	for (r = 1; r <= 3; r++) for (j = 1; j <= 2; j++) {
		rpc = rpcs[r]; c = concs[j]
		a = val(rpc, lo, c); b = val(rpc, hi, c)
		ok = (a != "" && b != "" && b > 0 && a / b <= 1.5)
		ratio = (a != "" && b != "" && b > 0) ? sprintf("%.2f", a / b) : "-"
		printf "%-15s %4s %12s %12s %15s  %s (<= 1.5)\n", rpc, c, fmt(a), fmt(b), ratio, verdict(ok)
	}
	for (j = 1; j <= 2; j++) {
		c = concs[j]; a = nspage["ListSnapshots", lo, c]; b = nspage["ListSnapshots", hi, c]
		if (a != "" || b != "")
			printf "  ListSnapshots conc %s: %s ns/page at 1k, %s ns/page at 10k (pages of 100)\n", c, a == "" ? "-" : a, b == "" ? "-" : b
	}

	print ""
	print "Concurrency 8 vs 1 at 10k objects:"
	for (r = 1; r <= 3; r++) {
		rpc = rpcs[r]; a = val(rpc, hi, 1); b = val(rpc, hi, 8)
		ok = (a != "" && b != "" && a > 0 && b > a)
		printf "  %-15s speedup %8s  %s (> 1)\n", rpc, (ok || (a != "" && b != "" && a > 0)) ? sprintf("%.2fx", b / a) : "-", verdict(ok)
	}

	print ""
	print "Throughput at 10k objects (target judged on the better concurrency):"
	split("CreateVolume:660 ListSnapshots:80", targets, " ")
	for (t = 1; t <= 2; t++) {
		split(targets[t], tp, ":"); rpc = tp[1]; want = tp[2]
		a = val(rpc, hi, 1); b = val(rpc, hi, 8)
		best = a; if (b != "" && (best == "" || b + 0 > best + 0)) best = b
		ok = (best != "" && best + 0 >= want)
		printf "  %-15s conc1 %9s  conc8 %9s  best %9s  %s (>= %d/s)\n", rpc, fmt(a), fmt(b), fmt(best), verdict(ok), want
	}

	print ""
	if (runstatus != 0) { print "go test failed: see _output/bench.txt"; failed++ }
	if (failed) { printf "RESULT: FAIL (%d check(s) failed)\n", failed; exit 1 }
	print "RESULT: PASS"
}' "$OUT"
