package schedbench

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	h := histogram{Bounds: []float64{0.01, 0.02}, Counts: []uint64{99, 100}, Count: 100}
	phases := []measured{
		// Round 0: plain 101 pods in 1s (100/s), snapshot 101 in 4s (25/s).
		{Scheduler: "with", Class: plainPods, Round: 0, Pods: 101, Elapsed: time.Second, Algorithm: h, Attempt: h},
		{Scheduler: "with", Class: snapshotPods, Round: 0, Pods: 101, Elapsed: 4 * time.Second, Algorithm: h, Attempt: h, InTopology: 101},
		// Round 1: plain 50/s, snapshot 20/s.
		{Scheduler: "with", Class: plainPods, Round: 1, Pods: 101, Elapsed: 2 * time.Second, Algorithm: h, Attempt: h},
		{Scheduler: "with", Class: snapshotPods, Round: 1, Pods: 101, Elapsed: 5 * time.Second, Algorithm: h, Attempt: h, InTopology: 100},
		{Scheduler: "without", Class: plainPods, Round: 0, Pods: 11, Elapsed: time.Second},
	}
	lines, err := summarize(phases)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		sched       string
		class       podClass
		rounds      int
		rate        float64
		pods, inTop int
	}{
		{"with", plainPods, 2, 75, 0, 0},
		{"with", snapshotPods, 2, 22.5, 202, 201},
		// overall: 200 intervals in 5 s (40/s) and in 7 s (28.57/s).
		{"with", overall, 2, (40 + 200.0/7) / 2, 202, 201},
		{"without", plainPods, 1, 10, 0, 0},
		{"without", overall, 1, 10, 0, 0},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d: %+v", len(lines), len(want), lines)
	}
	for i, w := range want {
		l := lines[i]
		if l.Scheduler != w.sched || l.Class != w.class || l.Rounds != w.rounds || math.Abs(l.PodsPerSecond-w.rate) > 1e-9 ||
			l.Pods != w.pods || l.InTopology != w.inTop {
			t.Errorf("line %d = %+v, want %+v", i, l, w)
		}
	}
	if p99 := lines[0].P99Algorithm; math.Abs(p99-0.01) > 1e-9 {
		t.Errorf("p99 of with/plain = %v, want 0.01", p99)
	}
	if !math.IsNaN(lines[3].P99Attempt) {
		t.Errorf("p99 without samples = %v, want NaN", lines[3].P99Attempt)
	}
}

func TestSummarizeRefusesMixedBuckets(t *testing.T) {
	_, err := summarize([]measured{
		{Scheduler: "a", Class: plainPods, Pods: 2, Elapsed: time.Second, Attempt: histogram{Bounds: []float64{1}, Counts: []uint64{1}, Count: 1}},
		{Scheduler: "a", Class: plainPods, Round: 1, Pods: 2, Elapsed: time.Second, Attempt: histogram{Bounds: []float64{2}, Counts: []uint64{1}, Count: 1}},
	})
	if err == nil {
		t.Error("no error for histograms with different buckets")
	}
}

func TestCheckAndTable(t *testing.T) {
	line := func(sched string, class podClass, rate float64, pods, in int) row {
		return row{Scheduler: sched, Class: class, Rounds: 1, PodsPerSecond: rate, P99Algorithm: 0.004, P99Attempt: 1.5, Pods: pods, InTopology: in}
	}
	for _, tc := range []struct {
		name   string
		lines  []row
		pass   bool
		output []string
	}{
		{"both targets met", []row{
			line("A", plainPods, 96, 0, 0), line("A", snapshotPods, 50, 10, 10), line("A", overall, 80, 10, 10),
			line("B", plainPods, 100, 0, 0), line("B", snapshotPods, 60, 10, 1), line("B", overall, 100, 10, 1),
		}, true, []string{"plain    pods/s A / B = 0.960, target >= 0.95: PASS", "overall  pods/s A / B = 0.800, target >= 0.80: PASS",
			"RESULT: PASS", "10/10", "1/10", "4ms", "1.5s"}},
		{"plain pods slower", []row{
			line("A", plainPods, 94, 0, 0), line("A", snapshotPods, 50, 10, 10), line("A", overall, 90, 10, 10),
			line("B", plainPods, 100, 0, 0), line("B", overall, 100, 0, 0),
		}, false, []string{"plain    pods/s A / B = 0.940, target >= 0.95: FAIL", "RESULT: FAIL"}},
		{"overall slower", []row{
			line("A", plainPods, 100, 0, 0), line("A", snapshotPods, 50, 10, 10), line("A", overall, 79, 10, 10),
			line("B", plainPods, 100, 0, 0), line("B", overall, 100, 0, 0),
		}, false, []string{"overall  pods/s A / B = 0.790, target >= 0.80: FAIL", "RESULT: FAIL"}},
		{"a snapshot pod outside its topology", []row{
			line("A", plainPods, 100, 0, 0), line("A", snapshotPods, 50, 10, 9), line("A", overall, 100, 10, 9),
			line("B", plainPods, 100, 0, 0), line("B", overall, 100, 0, 0),
		}, false, []string{"inside their snapshot's topology: FAIL", "RESULT: FAIL"}},
		{"a line missing", []row{line("A", plainPods, 100, 0, 0), line("B", plainPods, 100, 0, 0)},
			false, []string{"overall  pods/s A / B = NaN", "RESULT: FAIL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if got := writeTable(&out, tc.lines, "A", "B", check(tc.lines, "A", "B", targets)); got != tc.pass {
				t.Errorf("pass = %v, want %v", got, tc.pass)
			}
			for _, s := range tc.output {
				if !strings.Contains(out.String(), s) {
					t.Errorf("output lacks %q:\n%s", s, out.String())
				}
			}
		})
	}
}
