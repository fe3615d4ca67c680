// Command suitetable summarises JUnit reports of Kubernetes' storage
// suites (make kind-upstream): a table upstream suite → passed, failed,
// skipped; every skip with the reason the spec gave; every failure. It
// exits 1 when a spec failed or none passed, so a run that selected
// nothing cannot pass.
//
// Usage: go run ./e2e/cmd/suitetable junit.xml [junit-serial.xml ...]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/zonepath/zonepath/e2e/junit"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: suitetable junit.xml [more.xml ...]")
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	t := newTable()
	for _, path := range flag.Args() {
		r, err := junit.Load(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "suitetable:", err)
			os.Exit(1)
		}
		junit.ForEachTestCase(r, t.add)
	}
	t.write(os.Stdout)
	if err := t.verdict(); err != nil {
		fmt.Fprintln(os.Stderr, "suitetable:", err)
		os.Exit(1)
	}
}

// write prints the table, then the skips and failures.
func (t *table) write(w io.Writer) {
	width := len("suite")
	for _, name := range t.names() {
		width = max(width, len(name))
	}
	row := func(name string, a, b, c any) { fmt.Fprintf(w, "%-*s %6v %6v %7v\n", width, name, a, b, c) }
	row("suite", "passed", "failed", "skipped")
	for _, name := range t.names() {
		c := t.suites[name]
		row(name, c.passed, c.failed, c.skipped)
	}
	total := t.total()
	row("all", total.passed, total.failed, total.skipped)
	if len(t.skips) > 0 {
		fmt.Fprintln(w, "\nskipped, by the reason the spec gave:")
		for _, s := range t.skipReasons() {
			fmt.Fprintf(w, "  %3d  %s\n", len(t.skips[s]), s)
			for _, spec := range t.skips[s] {
				fmt.Fprintln(w, "         - "+spec)
			}
		}
	}
	if len(t.failures) > 0 {
		fmt.Fprintln(w, "\nfailed:")
		for _, f := range t.failures {
			fmt.Fprintln(w, "  "+f)
		}
	}
}
