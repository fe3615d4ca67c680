package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// progressEvery is how often a run says what it is doing, as kwok's and
// up's progress lines do.
const progressEvery = 5 * time.Second

// progress prints a line about the run every progressEvery until the
// returned function is called (which waits for the printer to stop).
func (r *run) progress(ctx context.Context, phase string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fmt.Fprintf(r.o.Out, "  %7s  %-6s %s\n", time.Since(t0).Round(time.Second), phase, r.line())
			}
		}
	}()
	return func() { cancel(); <-done }
}

// line is one progress line.
func (r *run) line() string {
	s := r.ledger.Snapshot()
	var ok, failed, cut, running int
	for _, c := range s.Cycles {
		switch c.Outcome {
		case "":
			running++
		case OutcomeOK:
			ok++
		case OutcomeCutShort:
			cut++
		default:
			failed++
		}
	}
	parts := []string{fmt.Sprintf("kills %d", len(s.Kills))}
	if last := r.killer.status(); last != "" {
		parts[0] += " (last: " + last + ")"
	}
	if len(s.Exits) > 0 {
		parts = append(parts, fmt.Sprintf("other exits %d", len(s.Exits)))
	}
	parts = append(parts,
		fmt.Sprintf("cycles %d ok, %d failed, %d cut short, %d running", ok, failed, cut, running),
		fmt.Sprintf("ops %d", len(s.Ops)),
		fmt.Sprintf("lost replies %d, edits between attempts %d", s.LostReplies, s.Edits),
		fmt.Sprintf("deletions pending %d", r.reaper.waiting()))
	return strings.Join(parts, " · ")
}

// report prints the tables, the findings and a summary, and writes them
// to report.txt in the output directory too.
func (r *run) report(findings []Finding, t0 time.Time) {
	s := r.ledger.Snapshot()
	var b strings.Builder
	fmt.Fprintln(&b)
	WriteComponents(&b, Rows(Victims, s, findings, time.Now()))
	WriteExits(&b, s.Exits)
	fmt.Fprintln(&b)
	WriteScenarios(&b, Scenarios(s, findings))
	fmt.Fprintln(&b)
	if len(findings) == 0 {
		fmt.Fprintln(&b, "findings: none: every backend object has its API object and back, every restore is inside its snapshot's topology, no cycle failed, nothing is stuck")
	} else {
		fmt.Fprintf(&b, "findings: %d\n", len(findings))
		WriteFindings(&b, s, findings)
	}
	edits := 0
	for _, c := range s.Cycles {
		for _, n := range c.Notes {
			if strings.HasPrefix(n, "edited") {
				edits++
			}
		}
	}
	fmt.Fprintf(&b, "chaos: %d kills, %d other exits, %d operations, %d cycles, %d lost replies, %d edits (%d between attempts), %d restores checked; wall time %s (seed %d)\n",
		len(s.Kills), len(s.Exits), len(s.Ops), len(s.Cycles), s.LostReplies, edits, s.Edits, len(s.Restores),
		time.Since(t0).Round(time.Second), r.o.Seed)
	fmt.Fprint(r.o.Out, b.String())
	path := filepath.Join(r.o.OutputDir, "report.txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		fmt.Fprintf(r.o.Out, "chaos: writing %s: %v\n", path, err)
	}
}
