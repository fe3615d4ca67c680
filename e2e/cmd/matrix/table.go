package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// printTable prints one line per personality: sanity and e2e as
// passed/failed/skipped, wall time, verdict.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERSONALITY\tCLUSTER\tSANITY P/F/S\tE2E P/F/S\tTIME\tRESULT")
	for _, r := range rows {
		result := "ok"
		if p := r.problems(); len(p) > 0 {
			result = "FAIL: " + strings.Join(p, "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Personality.Name, r.Personality.Cluster,
			r.Sanity.counts(), r.E2E.counts(), r.Took.Round(time.Second), result)
	}
	tw.Flush()
}

// printSkips prints every skip, those of one reason together: the
// capability that explains it, or UNEXPLAINED.
func printSkips(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERSONALITY\tSUITE\tSKIPS\tCAPABILITY\tREASON (first spec)")
	for _, r := range rows {
		for _, s := range r.suites() {
			for _, g := range groupSkips(s.res.Skips) {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s (%s)\n", r.Personality.Name, s.name, g.count, g.label(), orNone(g.Reason), shortSpec(g.Spec))
			}
		}
	}
	tw.Flush()
}

type skipGroup struct {
	skip
	count int
}

func (g skipGroup) label() string {
	switch {
	case g.Capability == "":
		return "UNEXPLAINED (unknown reason)"
	case !g.Explained:
		return "UNEXPLAINED (" + g.Capability + ", not in lacks:)"
	}
	return g.Capability
}

// groupSkips joins skips of the same reason, in first-seen order.
func groupSkips(skips []skip) []skipGroup {
	var out []skipGroup
	index := map[string]int{}
	for _, s := range skips {
		if i, ok := index[s.Reason]; ok {
			out[i].count++
			continue
		}
		index[s.Reason] = len(out)
		out = append(out, skipGroup{skip: s, count: 1})
	}
	return out
}

// verdict prints why the matrix fails, and says whether it passed: every
// personality ran, and none has a problem.
func verdict(w io.Writer, rows []row, want int) bool {
	ok := len(rows) == want
	if !ok {
		fmt.Fprintf(w, "conformance-matrix: FAIL: %d of %d personalities ran\n", len(rows), want)
	}
	for _, r := range rows {
		for _, p := range r.problems() {
			ok = false
			fmt.Fprintf(w, "conformance-matrix: FAIL: %s: %s\n", r.Personality.Name, p)
		}
		if unused := r.unusedLacks(); len(unused) > 0 {
			fmt.Fprintf(w, "conformance-matrix: note: %s lacks %s, but no skip needed it\n", r.Personality.Name, strings.Join(unused, ", "))
		}
	}
	if ok {
		fmt.Fprintln(w, "conformance-matrix: passed: no failure, every skip explained by what its personality lacks")
	}
	return ok
}

func orNone(s string) string {
	if s == "" {
		return "(no reason given)"
	}
	return s
}

// shortSpec is a spec's name from its scenario on (the e2e suite's
// names start with upstream's External Storage prefix), cut to 70 bytes.
func shortSpec(s string) string {
	if i := strings.Index(s, "scenario "); i >= 0 {
		s = s[i:]
	}
	if len(s) <= 70 {
		return s
	}
	return s[:67] + "..."
}

// writeSkips writes every skip of a row, one a line: suite, capability
// (or UNEXPLAINED), spec, reason.
func writeSkips(path string, r row) error {
	var b strings.Builder
	for _, s := range r.suites() {
		for _, k := range s.res.Skips {
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", s.name, skipGroup{skip: k}.label(), k.Spec, orNone(k.Reason))
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
