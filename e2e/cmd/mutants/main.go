package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// suiteRun is one of make conformance's runs of the suite: a cluster
// file, the gates of zonepath's controllers, the driver files and the
// label filter (hack/conformance.sh runs the same).
type suiteRun struct {
	cluster, featureGates, driver, ext, labelFilter string
}

var (
	gateOnRun = suiteRun{
		cluster:      "hack/conformance/e2e-cluster.yaml",
		featureGates: "VolumeSnapshotTopology=true",
		driver:       "e2e/testdata/zonepath.yaml",
		ext:          "e2e/testdata/zonepath-ext.yaml",
		labelFilter:  "!capability-off && !feature-gate-off && !attach-limits && !kubelet",
	}
	cluster2Run = suiteRun{
		cluster:      "hack/conformance/e2e-cluster-2.yaml",
		featureGates: "VolumeSnapshotTopology=false",
		driver:       "e2e/testdata/zonepath.yaml",
		ext:          "e2e/testdata/zonepath-cluster-2-ext.yaml",
		labelFilter:  "feature-gate-off || attach-limits",
	}
)

func main() {
	var o options
	flag.StringVar(&o.bin, "bin-dir", "bin", "directory of the built binaries and components (make build components)")
	flag.StringVar(&o.out, "output-dir", "_output/e2e-mutants", "directory for each mutant's cluster, logs, suite output and JUnit; wiped first")
	flag.StringVar(&o.only, "only", "", "comma-separated mutant names to run (default: all)")
	flag.StringVar(&o.rbac, "rbac", "deploy/rbac", "kustomization whose ServiceAccounts the clusters' components run as (zonepath-cluster up --rbac); empty: all admin")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-mutants:", err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	var results []result
	for _, m := range o.selected() {
		fmt.Printf("e2e-mutants: [%d/%d] %s: %s\n", len(results)+1, len(o.selected()), m.name, m.breaks)
		r := o.run(ctx, m)
		fmt.Printf("e2e-mutants: %s: %s in %s\n", m.name, r.verdict(), r.took.Round(time.Second))
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	printTable(results)
	fmt.Printf("e2e-mutants: %d mutants in %s; output under %s\n", len(results), time.Since(start).Round(time.Second), o.out)
	for _, r := range results {
		if !r.caught() {
			os.Exit(1)
		}
	}
}

type options struct{ bin, out, only, rbac string }

func (o *options) validate() error {
	var err error
	if o.bin, err = filepath.Abs(o.bin); err != nil {
		return err
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return err
	}
	if o.rbac != "" {
		if o.rbac, err = filepath.Abs(o.rbac); err != nil {
			return err
		}
	}
	for _, name := range strings.Split(o.only, ",") {
		if name != "" && find(name) == nil {
			return fmt.Errorf("--only: no mutant %q (mutants: %s)", name, strings.Join(names(), ", "))
		}
	}
	return nil
}

func (o *options) selected() []mutant {
	if o.only == "" {
		return mutants
	}
	var out []mutant
	for _, name := range strings.Split(o.only, ",") {
		if m := find(name); m != nil {
			out = append(out, *m)
		}
	}
	return out
}

func find(name string) *mutant {
	for i := range mutants {
		if mutants[i].name == name {
			return &mutants[i]
		}
	}
	return nil
}

func names() []string {
	out := make([]string, len(mutants))
	for i, m := range mutants {
		out[i] = m.name
	}
	return out
}

func printTable(results []result) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "MUTANT\tMUST FAIL\tFAILED\tRESULT\tTIME")
	for _, r := range results {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.mutant.name, scenarioList(r.mutant.catchers), scenarioList(r.failed), r.verdict(), r.took.Round(time.Second))
	}
	w.Flush()
}

func scenarioList(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
