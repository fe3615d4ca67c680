package main

import (
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"

	"github.com/zonepath/zonepath/e2e/junit"
)

func main() {
	out := flag.String("o", "", "the merged JUnit file to write")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: junitmerge -o merged.xml junit-<run>.xml ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "junitmerge:", err)
		os.Exit(1)
	}
}

func run(out string, paths []string) error {
	runs, err := load(paths)
	if err != nil {
		return err
	}
	merged, summary, problems := Merge(runs)
	if err := write(out, merged); err != nil {
		return err
	}
	fmt.Println(summary)
	for _, g := range summary.VersionGated {
		fmt.Println("junitmerge: skipped for the Kubernetes version, accepted:", g)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "junitmerge:", p)
	}
	switch {
	case len(problems) > 0:
		return fmt.Errorf("%d specs were not run exactly once; see %s", len(problems), out)
	case summary.Failed > 0 || summary.Skipped > 0:
		return fmt.Errorf("%d specs failed, %d skipped; see %s", summary.Failed, summary.Skipped, out)
	}
	return nil
}

// load reads the runs' JUnit files; a missing or unreadable one (a run
// that died before writing it) is an error naming it.
func load(paths []string) ([]Run, error) {
	runs := make([]Run, 0, len(paths))
	seen := map[string]string{}
	for _, p := range paths {
		report, err := junit.Load(p)
		if err != nil {
			return nil, err
		}
		r := Run{Name: runName(p), Report: report}
		if other, dup := seen[r.Name]; dup {
			return nil, fmt.Errorf("%s and %s are both run %q", other, p, r.Name)
		}
		seen[r.Name] = p
		runs = append(runs, r)
	}
	return runs, nil
}

// runName is <run> of junit-<run>.xml, else the file's base name.
func runName(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if name, ok := strings.CutPrefix(base, "junit-"); ok && name != "" {
		return name
	}
	return base
}

func write(path string, r reporters.JUnitTestSuites) error {
	data, err := xml.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(data, '\n')...), 0o644)
}
