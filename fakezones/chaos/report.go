package chaos

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of the component table.
type Row struct {
	Component string
	Kills     int
	// Back is the slowest return of the component to service after a
	// kill.
	Back time.Duration
	// Exits are deaths without a kill (the component was restarted).
	Exits int
	// Ops are the operations in flight during a kill of the component
	// that still reached their end state.
	Ops int
	// Orphans and Stuck are the findings of those rules whose object a
	// cycle made while the component was killed.
	Orphans, Stuck int
}

// Total is the component name of the totals row.
const Total = "total"

// Rows is the component table: a row per victim, in order, then the
// totals, in which every kill, operation and finding counts once (one
// finding may be in several components' rows: every component killed
// during its cycle). Findings whose cycle is unknown count only in the
// totals; end closes the cycles still open.
func Rows(victims []string, s Snapshot, findings []Finding, end time.Time) []Row {
	spans := map[string][2]time.Time{}
	for _, c := range s.Cycles {
		to := c.End
		if to.IsZero() {
			to = end
		}
		spans[c.Name] = [2]time.Time{c.Start, to}
	}
	total := Row{Component: Total, Exits: len(s.Exits), Ops: len(s.Ops)}
	var rows []Row
	for _, v := range victims {
		r := Row{Component: v}
		var at []time.Time
		for _, k := range s.Kills {
			if k.Component == v {
				r.Kills++
				r.Back = max(r.Back, k.Back)
				at = append(at, k.At)
			}
		}
		total.Kills += r.Kills
		total.Back = max(total.Back, r.Back)
		for _, e := range s.Exits {
			if e.Component == v {
				r.Exits++
			}
		}
		for _, op := range s.Ops {
			if killedDuring(at, op.Start, op.End) {
				r.Ops++
			}
		}
		for _, f := range findings {
			span, ok := spans[f.Cycle]
			if !ok || !killedDuring(at, span[0], span[1]) {
				continue
			}
			r.Orphans += count(f.Rule == RuleOrphan)
			r.Stuck += count(f.Rule == RuleStuck)
		}
		rows = append(rows, r)
	}
	for _, f := range findings {
		total.Orphans += count(f.Rule == RuleOrphan)
		total.Stuck += count(f.Rule == RuleStuck)
	}
	return append(rows, total)
}

func killedDuring(at []time.Time, from, to time.Time) bool {
	return slices.ContainsFunc(at, func(t time.Time) bool { return !t.Before(from) && !t.After(to) })
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteComponents prints the component table.
func WriteComponents(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "COMPONENT\tKILLS\tSLOWEST BACK\tOTHER EXITS\tOPS DURING KILLS\tORPHANS\tSTUCK\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t\n", r.Component, r.Kills, r.Back.Round(100*time.Millisecond), r.Exits, r.Ops, r.Orphans, r.Stuck)
	}
	tw.Flush()
}

// WriteExits prints how many components died without a kill, and why.
func WriteExits(w io.Writer, exits []Exit) {
	if len(exits) == 0 {
		return
	}
	lost := 0
	for _, e := range exits {
		if e.Why == lostCSI {
			lost++
		}
	}
	fmt.Fprintf(w, "exits without a kill: %d, %d of them a sidecar that %s\n", len(exits), lost, lostCSI)
	for _, e := range exits {
		if e.Why != lostCSI {
			fmt.Fprintf(w, "  %s at %s; its log ended:\n%s\n", e.Component, e.At.Format(time.TimeOnly), e.Why)
		}
	}
}

// ScenarioRow is one line of the scenario table.
type ScenarioRow struct {
	Scenario                     string
	Cycles, OK, Failed, CutShort int
	Orphans, Stuck, Other        int
}

// Scenarios is the scenario table: per scenario, how its cycles ended
// and the findings on their objects (Other: missing backend objects and
// restores outside the snapshot's topology), in the order scenarios
// first appear.
func Scenarios(s Snapshot, findings []Finding) []ScenarioRow {
	var rows []ScenarioRow
	index := map[string]int{}
	of := map[string]string{}
	for _, c := range s.Cycles {
		i, ok := index[c.Scenario]
		if !ok {
			i = len(rows)
			index[c.Scenario] = i
			rows = append(rows, ScenarioRow{Scenario: c.Scenario})
		}
		of[c.Name] = c.Scenario
		r := &rows[i]
		r.Cycles++
		switch c.Outcome {
		case OutcomeOK:
			r.OK++
		case OutcomeCutShort, "":
			r.CutShort++
		default:
			r.Failed++
		}
	}
	for _, f := range findings {
		i, ok := index[of[f.Cycle]]
		if !ok {
			continue
		}
		switch f.Rule {
		case RuleOrphan:
			rows[i].Orphans++
		case RuleStuck:
			rows[i].Stuck++
		default:
			rows[i].Other++
		}
	}
	return rows
}

// WriteScenarios prints the scenario table.
func WriteScenarios(w io.Writer, rows []ScenarioRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SCENARIO\tCYCLES\tOK\tFAILED\tCUT SHORT\tORPHANS\tSTUCK\tOTHER FINDINGS\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Scenario, r.Cycles, r.OK, r.Failed, r.CutShort, r.Orphans, r.Stuck, r.Other)
	}
	tw.Flush()
}

// WriteFindings prints every finding, sorted by rule then object, and the
// notes and outcome of the cycles they came from.
func WriteFindings(w io.Writer, s Snapshot, findings []Finding) {
	sorted := slices.Clone(findings)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Rule != sorted[j].Rule {
			return sorted[i].Rule < sorted[j].Rule
		}
		return sorted[i].What < sorted[j].What
	})
	cycles := map[string]Cycle{}
	for _, c := range s.Cycles {
		cycles[c.Name] = c
	}
	shown := map[string]bool{}
	for _, f := range sorted {
		fmt.Fprintf(w, "  %s\n", f)
		c, ok := cycles[f.Cycle]
		if !ok || shown[c.Name] {
			continue
		}
		shown[c.Name] = true
		fmt.Fprintf(w, "      cycle %s (%s) ended %q", c.Name, c.Scenario, c.Outcome)
		if len(c.Notes) > 0 {
			fmt.Fprintf(w, "; it saw: %s", strings.Join(c.Notes, "; "))
		}
		fmt.Fprintln(w)
	}
}
