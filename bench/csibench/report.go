package csibench

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/zonepath/zonepath/bench/internal/stats"
)

// The targets of issue 14, checked on the table's numbers.
const (
	smallN, largeN = 1000, 10000
	// maxListRatio: a complete listing at largeN costs zonepath at most
	// this times what it costs the null driver.
	maxListRatio = 1.5
	// maxEntryGrowth: zonepath's cost per listed entry at largeN is at
	// most this times its cost at smallN.
	maxEntryGrowth = 1.5
)

// minCreateRate is the creates per second zonepath must sustain at
// largeN objects, by concurrency.
var minCreateRate = map[int]float64{1: 700, 8: 1500}

var (
	rpcs     = []string{"CreateVolume", "DeleteVolume", "CreateSnapshot", "DeleteSnapshot", "ListVolumes", "ListSnapshots"}
	listRPCs = []string{"ListVolumes", "ListSnapshots"}
)

// rate is the median of the rounds' ops/s; 0 when unmeasured.
func (s *sample) rate() float64 {
	if s == nil || len(s.rates) == 0 {
		return 0
	}
	return stats.Median(s.rates)
}

// quantile q of the latencies (nearest rank).
func (s *sample) quantile(q float64) time.Duration {
	if s == nil || len(s.lat) == 0 {
		return 0
	}
	l := slices.Clone(s.lat)
	slices.Sort(l)
	return l[min(int(q*float64(len(l))), len(l)-1)]
}

// cpuPerOp is the driver's CPU time per operation.
func (s *sample) cpuPerOp() time.Duration {
	if s == nil || s.ops == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.ops)
}

// report prints the table and the checks, and says whether all passed.
func report(w io.Writer, res results, objects, concs []int) bool {
	fmt.Fprintf(w, "%-14s %7s %4s | %-42s | %-42s | %s\n", "", "", "", "zonepath", "null driver (baseline)", "zonepath/null")
	fmt.Fprintf(w, "%-14s %7s %4s | %9s %10s %10s %9s | %9s %10s %10s %9s | %6s\n",
		"RPC", "objects", "conc", "ops/s", "p50", "p99", "cpu/op", "ops/s", "p50", "p99", "cpu/op", "time")
	for _, rpc := range rpcs {
		for _, n := range objects {
			for _, c := range concs {
				z, nl := res[key{rpc, n, c, zonepathName}], res[key{rpc, n, c, nullName}]
				fmt.Fprintf(w, "%-14s %7d %4d | %9.1f %10s %10s %9s | %9.1f %10s %10s %9s | %5.2fx\n", rpc, n, c,
					z.rate(), dur(z.quantile(0.5)), dur(z.quantile(0.99)), dur(z.cpuPerOp()),
					nl.rate(), dur(nl.quantile(0.5)), dur(nl.quantile(0.99)), dur(nl.cpuPerOp()), ratio(nl.rate(), z.rate()))
			}
		}
	}
	fmt.Fprintln(w, "(List*: one op is a complete listing in pages of 100; cpu/op is the driver process's CPU per op,")
	fmt.Fprintln(w, " from /proc in 10 ms ticks; ops/s is the median of the rounds'; time = null ops/s / zonepath ops/s)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Cost per listed entry (1 / (ops/s x objects)):")
	for _, rpc := range listRPCs {
		for _, c := range concs {
			fmt.Fprintf(w, "  %-13s conc %d:", rpc, c)
			for _, n := range objects {
				fmt.Fprintf(w, "  %d: zonepath %s, null %s", n, dur(perEntry(res[key{rpc, n, c, zonepathName}], n)), dur(perEntry(res[key{rpc, n, c, nullName}], n)))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	return verdicts(w, checks(res, concs))
}

// check is one target and what the run measured for it.
type check struct {
	name  string
	value float64
	want  string
	ok    bool
}

// checks are the targets, judged on res.
func checks(res results, concs []int) []check {
	var out []check
	for _, rpc := range listRPCs {
		for _, c := range concs {
			z, nl := res[key{rpc, largeN, c, zonepathName}], res[key{rpc, largeN, c, nullName}]
			r := ratio(nl.rate(), z.rate())
			out = append(out, check{fmt.Sprintf("%s at %d, conc %d: zonepath/null time", rpc, largeN, c), r, fmt.Sprintf("<= %.1f", maxListRatio), r > 0 && r <= maxListRatio})
		}
	}
	for _, rpc := range listRPCs {
		for _, c := range concs {
			small, large := perEntry(res[key{rpc, smallN, c, zonepathName}], smallN), perEntry(res[key{rpc, largeN, c, zonepathName}], largeN)
			r := ratio(float64(large), float64(small))
			out = append(out, check{fmt.Sprintf("%s conc %d: zonepath cost per entry %d/%d", rpc, c, largeN, smallN), r, fmt.Sprintf("<= %.1f", maxEntryGrowth), r > 0 && r <= maxEntryGrowth})
		}
	}
	for _, rpc := range []string{"CreateVolume", "CreateSnapshot"} {
		for _, c := range concs {
			want, ok := minCreateRate[c]
			if !ok {
				continue
			}
			r := res[key{rpc, largeN, c, zonepathName}].rate()
			out = append(out, check{fmt.Sprintf("%s at %d, conc %d: zonepath ops/s", rpc, largeN, c), r, fmt.Sprintf(">= %.0f", want), r >= want})
		}
	}
	return out
}

// verdicts prints PASS or FAIL per check and the RESULT line.
func verdicts(w io.Writer, cs []check) bool {
	failed := 0
	for _, c := range cs {
		v := "PASS"
		if !c.ok {
			v = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "%s  %-58s %10.2f  (%s)\n", v, c.name, c.value, c.want)
	}
	if failed > 0 {
		fmt.Fprintf(w, "RESULT: FAIL (%d of %d checks failed)\n", failed, len(cs))
		return false
	}
	fmt.Fprintf(w, "RESULT: PASS (%d checks)\n", len(cs))
	return true
}

// perEntry is the time per listed entry at the median rate, n entries
// per listing.
func perEntry(s *sample, n int) time.Duration {
	if r := s.rate(); r > 0 {
		return time.Duration(float64(time.Second) / (r * float64(n)))
	}
	return 0
}

// ratio is a/b, or 0 when either is unmeasured: a check on it fails.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d.Nanoseconds())/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d.Nanoseconds())/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}
