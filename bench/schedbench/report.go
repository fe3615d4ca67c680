package schedbench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/zonepath/zonepath/bench/internal/stats"
)

// podClass is the kind of pods a phase schedules.
type podClass string

const (
	// plainPods have no volumes: SnapshotTopology skips them in
	// PreFilter, so their throughput shows what the plugin costs pods
	// that do not use it.
	plainPods podClass = "plain"
	// Snapshot pods each have a WaitForFirstConsumer PVC restored from a
	// VolumeSnapshot with zonal or regional topology.
	snapshotPods podClass = "snapshot"
	// overall is both classes of a round together.
	overall podClass = "overall"
)

// measured is one measured phase: the pods of one class, scheduled by one
// scheduler process from a backlog, in one round.
type measured struct {
	Scheduler string
	Class     podClass
	Round     int
	// Pods is how many pods were scheduled; Elapsed is the time from the
	// first to the last of them getting a node.
	Pods    int
	Elapsed time.Duration
	// Algorithm and Attempt are the scheduler's algorithmMetric and
	// attemptMetric over the phase.
	Algorithm, Attempt histogram
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

// row is one row of the table: one scheduler and class over all rounds.
type row struct {
	Scheduler string
	Class     podClass
	Rounds    int
	// PodsPerSecond is the median over rounds.
	PodsPerSecond float64
	// P99Algorithm and P99Attempt are the 99th percentiles of the rounds'
	// merged histograms, in seconds.
	P99Algorithm, P99Attempt float64
	// Pods and InTopology are summed over rounds (snapshot pods only).
	Pods, InTopology int
}

// summarize turns phases into lines, per scheduler in order of first
// appearance, the classes in the order plain, snapshot, overall; the
// overall line of a round joins its plain and snapshot phases.
func summarize(phases []measured) ([]row, error) {
	var out []row
	for _, sched := range schedulers(phases) {
		for _, class := range []podClass{plainPods, snapshotPods, overall} {
			line, err := summarizeRow(sched, class, phases)
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

func schedulers(phases []measured) []string {
	var names []string
	for _, p := range phases {
		if !slices.Contains(names, p.Scheduler) {
			names = append(names, p.Scheduler)
		}
	}
	return names
}

// summarizeRow is the row of sched and class: per round the intervals and
// time of the class (both classes for overall), the median rate, the
// merged histogram.
func summarizeRow(sched string, class podClass, phases []measured) (row, error) {
	type sum struct {
		intervals int
		elapsed   time.Duration
	}
	rounds := map[int]*sum{}
	line := row{Scheduler: sched, Class: class}
	var algorithm, attempt histogram
	for _, p := range phases {
		if p.Scheduler != sched || (class != overall && p.Class != class) {
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
		algorithm, err1 = algorithm.add(p.Algorithm)
		attempt, err2 = attempt.add(p.Attempt)
		if err := errors.Join(err1, err2); err != nil {
			return row{}, fmt.Errorf("%s %s round %d: %w", sched, class, p.Round, err)
		}
		if p.Class == snapshotPods {
			line.Pods += p.Pods
			line.InTopology += p.InTopology
		}
	}
	var rates []float64
	for _, r := range rounds {
		rates = append(rates, rate(r.intervals, r.elapsed))
	}
	line.Rounds = len(rates)
	line.PodsPerSecond = stats.Median(rates)
	line.P99Algorithm, line.P99Attempt = algorithm.quantile(0.99), attempt.quantile(0.99)
	return line, nil
}

// target is a minimum ratio of the throughput of one scheduler to that of
// another, for one class.
type target struct {
	Class podClass
	Min   float64
}

// targets are issue 14's: the plugin costs pods without snapshot-sourced
// PVCs at most 5% of throughput, and the whole workload at most 20%.
var targets = []target{{Class: plainPods, Min: 0.95}, {Class: overall, Min: 0.8}}

// verdict is a target checked.
type verdict struct {
	target
	Ratio float64
	Pass  bool
}

// check compares the lines of with and without against targets; a
// target whose lines are missing fails.
func check(lines []row, with, without string, targets []target) []verdict {
	var out []verdict
	for _, t := range targets {
		a, okA := find(lines, with, t.Class)
		b, okB := find(lines, without, t.Class)
		v := verdict{target: t, Ratio: math.NaN()}
		if okA && okB {
			v.Ratio = a.PodsPerSecond / b.PodsPerSecond
		}
		v.Pass = v.Ratio >= t.Min // false for NaN
		out = append(out, v)
	}
	return out
}

func find(lines []row, sched string, class podClass) (row, bool) {
	i := slices.IndexFunc(lines, func(l row) bool { return l.Scheduler == sched && l.Class == class })
	if i < 0 {
		return row{}, false
	}
	return lines[i], true
}

// placementOK says whether every snapshot pod the scheduler with the
// plugin placed is inside its snapshot's topology: the proof that the
// plugin was at work. With no snapshot pods it is false.
func placementOK(lines []row, with string) bool {
	l, ok := find(lines, with, snapshotPods)
	return ok && l.Pods > 0 && l.InTopology == l.Pods
}

// writeTable writes the table, the verdicts, the placement check and a
// final RESULT line, and reports whether everything passed.
func writeTable(w io.Writer, lines []row, with, without string, verdicts []verdict) bool {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pods\tscheduler\trounds\tpods/s (median)\tp99 algorithm\tp99 attempt\tsnapshot pods in topology")
	for _, l := range lines {
		placed := ""
		if l.Class == snapshotPods {
			placed = fmt.Sprintf("%d/%d", l.InTopology, l.Pods)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%s\t%s\t%s\n", l.Class, l.Scheduler, l.Rounds, l.PodsPerSecond,
			seconds(l.P99Algorithm), seconds(l.P99Attempt), placed)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	pass := true
	for _, v := range verdicts {
		fmt.Fprintf(w, "%-8s pods/s %s / %s = %.3f, target >= %.2f: %s\n", v.Class, with, without, v.Ratio, v.Min, passFail(v.Pass))
		pass = pass && v.Pass
	}
	placed := placementOK(lines, with)
	fmt.Fprintf(w, "snapshot pods of %s all inside their snapshot's topology: %s\n", with, passFail(placed))
	pass = pass && placed
	fmt.Fprintf(w, "RESULT: %s\n", passFail(pass))
	return pass
}

func passFail(ok bool) string {
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
