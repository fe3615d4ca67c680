package schedbench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"
)

// Class is the kind of pods a phase schedules.
type Class string

const (
	// Plain pods have no volumes: SnapshotTopology skips them in
	// PreFilter, so their throughput shows what the plugin costs pods
	// that do not use it.
	Plain Class = "plain"
	// Snapshot pods each have a WaitForFirstConsumer PVC restored from a
	// VolumeSnapshot with zonal or regional topology.
	Snapshot Class = "snapshot"
	// Overall is both classes of a round together.
	Overall Class = "overall"
)

// Phase is one measured phase: the pods of one class, scheduled by one
// scheduler process from a backlog, in one round.
type Phase struct {
	Scheduler string
	Class     Class
	Round     int
	// Pods is how many pods were scheduled; Elapsed is the time from the
	// first to the last of them getting a node.
	Pods    int
	Elapsed time.Duration
	// Algorithm and Attempt are the scheduler's AlgorithmMetric and
	// AttemptMetric over the phase.
	Algorithm, Attempt Histogram
	// InTopology is how many snapshot pods landed on a node their
	// snapshot's nodeAffinity admits.
	InTopology int
}

// rate is pods per second over intervals: n pods bound at n distinct
// times span n-1 intervals.
func rate(intervals int, elapsed time.Duration) float64 {
	if intervals <= 0 || elapsed <= 0 {
		return math.NaN()
	}
	return float64(intervals) / elapsed.Seconds()
}

// Line is one row of the table: one scheduler and class over all rounds.
type Line struct {
	Scheduler string
	Class     Class
	Rounds    int
	// PodsPerSecond is the median over rounds.
	PodsPerSecond float64
	// P99Algorithm and P99Attempt are the 99th percentiles of the rounds'
	// merged histograms, in seconds.
	P99Algorithm, P99Attempt float64
	// Pods and InTopology are summed over rounds (snapshot pods only).
	Pods, InTopology int
}

// Summarize turns phases into lines, per scheduler in order of first
// appearance, the classes in the order plain, snapshot, overall; the
// overall line of a round joins its plain and snapshot phases.
func Summarize(phases []Phase) ([]Line, error) {
	var out []Line
	for _, sched := range schedulers(phases) {
		for _, class := range []Class{Plain, Snapshot, Overall} {
			line, err := summarize(sched, class, phases)
			if err != nil {
				return nil, err
			}
			if line.Rounds > 0 {
				out = append(out, line)
			}
		}
	}
	return out, nil
}

func schedulers(phases []Phase) []string {
	var names []string
	for _, p := range phases {
		if !slices.Contains(names, p.Scheduler) {
			names = append(names, p.Scheduler)
		}
	}
	return names
}

// summarize is the line of sched and class: per round the intervals and
// time of the class (both classes for Overall), the median rate, the
// merged histogram.
func summarize(sched string, class Class, phases []Phase) (Line, error) {
	type sum struct {
		intervals int
		elapsed   time.Duration
	}
	rounds := map[int]*sum{}
	line := Line{Scheduler: sched, Class: class}
	var algorithm, attempt Histogram
	for _, p := range phases {
		if p.Scheduler != sched || (class != Overall && p.Class != class) {
			continue
		}
		r := rounds[p.Round]
		if r == nil {
			r = &sum{}
			rounds[p.Round] = r
		}
		r.intervals += p.Pods - 1
		r.elapsed += p.Elapsed
		var err1, err2 error
		algorithm, err1 = algorithm.Add(p.Algorithm)
		attempt, err2 = attempt.Add(p.Attempt)
		if err := errors.Join(err1, err2); err != nil {
			return Line{}, fmt.Errorf("%s %s round %d: %w", sched, class, p.Round, err)
		}
		if p.Class == Snapshot {
			line.Pods += p.Pods
			line.InTopology += p.InTopology
		}
	}
	var rates []float64
	for _, r := range rounds {
		rates = append(rates, rate(r.intervals, r.elapsed))
	}
	line.Rounds = len(rates)
	line.PodsPerSecond = median(rates)
	line.P99Algorithm, line.P99Attempt = algorithm.Quantile(0.99), attempt.Quantile(0.99)
	return line, nil
}

// median of xs; NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// Target is a minimum ratio of the throughput of one scheduler to that of
// another, for one class.
type Target struct {
	Class Class
	Min   float64
}

// Targets are issue 14's: the plugin costs pods without snapshot-sourced
// PVCs at most 5% of throughput, and the whole workload at most 20%.
var Targets = []Target{{Class: Plain, Min: 0.95}, {Class: Overall, Min: 0.8}}

// Verdict is a target checked.
type Verdict struct {
	Target
	Ratio float64
	Pass  bool
}

// Check compares the lines of with and without against targets; a
// target whose lines are missing fails.
func Check(lines []Line, with, without string, targets []Target) []Verdict {
	var out []Verdict
	for _, t := range targets {
		a, okA := find(lines, with, t.Class)
		b, okB := find(lines, without, t.Class)
		v := Verdict{Target: t, Ratio: math.NaN()}
		if okA && okB {
			v.Ratio = a.PodsPerSecond / b.PodsPerSecond
		}
		v.Pass = v.Ratio >= t.Min // false for NaN
		out = append(out, v)
	}
	return out
}

func find(lines []Line, sched string, class Class) (Line, bool) {
	i := slices.IndexFunc(lines, func(l Line) bool { return l.Scheduler == sched && l.Class == class })
	if i < 0 {
		return Line{}, false
	}
	return lines[i], true
}

// PlacementOK says whether every snapshot pod the scheduler with the
// plugin placed is inside its snapshot's topology: the proof that the
// plugin was at work. With no snapshot pods it is false.
func PlacementOK(lines []Line, with string) bool {
	l, ok := find(lines, with, Snapshot)
	return ok && l.Pods > 0 && l.InTopology == l.Pods
}

// WriteTable writes the table, the verdicts, the placement check and a
// final RESULT line, and reports whether everything passed.
func WriteTable(w io.Writer, lines []Line, with, without string, verdicts []Verdict) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pods\tscheduler\trounds\tpods/s (median)\tp99 algorithm\tp99 attempt\tsnapshot pods in topology")
	for _, l := range lines {
		placed := ""
		if l.Class == Snapshot {
			placed = fmt.Sprintf("%d/%d", l.InTopology, l.Pods)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%s\t%s\t%s\n", l.Class, l.Scheduler, l.Rounds, l.PodsPerSecond,
			seconds(l.P99Algorithm), seconds(l.P99Attempt), placed)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	pass := true
	for _, v := range verdicts {
		fmt.Fprintf(w, "%-8s pods/s %s / %s = %.3f, target >= %.2f: %s\n", v.Class, with, without, v.Ratio, v.Min, verdict(v.Pass))
		pass = pass && v.Pass
	}
	placed := PlacementOK(lines, with)
	fmt.Fprintf(w, "snapshot pods of %s all inside their snapshot's topology: %s\n", with, verdict(placed))
	pass = pass && placed
	fmt.Fprintf(w, "RESULT: %s\n", verdict(pass))
	return pass
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func seconds(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}
