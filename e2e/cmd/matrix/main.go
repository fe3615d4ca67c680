package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.bin, "bin-dir", "bin", "directory of the built binaries and components (make build components)")
	flag.StringVar(&o.out, "output-dir", "_output/conformance-matrix", "directory for each personality's output (<name>/) and the clusters (c<N>/)")
	flag.StringVar(&o.root, "personalities", "e2e/testdata/personalities", "directory of the personality folders")
	flag.StringVar(&o.only, "only", "", "comma-separated personalities to run (default: all)")
	flag.IntVar(&o.parallel, "parallel", 1, "clusters (with their personalities' runs) at a time")
	flag.StringVar(&o.mutable, "mutable-parameters", "sanity/testdata/mutable-parameters.yaml",
		"--csi.testvolumemutableparameters of every personality's zonepath-sanity run: mutable parameters the zonepath binary accepts; empty: none (the ModifyVolume extension then skips)")
	flag.StringVar(&o.rbac, "rbac", "deploy/rbac", "kustomization whose ServiceAccounts the clusters' components run as (zonepath-cluster up --rbac); empty: all admin")
	flag.Parse()
	if o.parallel < 1 {
		fmt.Fprintln(os.Stderr, "conformance-matrix: --parallel must be at least 1")
		os.Exit(2)
	}
	if err := o.absolute(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-matrix:", err)
		os.Exit(2)
	}
	ps, err := loadPersonalities(o.root, splitList(o.only))
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance-matrix:", err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	start := time.Now()
	rows := o.run(ctx, groupByCluster(o.root, ps), len(ps))
	// The table also in <out>/matrix.txt, for CI's artifacts.
	w := io.Writer(os.Stdout)
	if f, err := os.Create(filepath.Join(o.out, "matrix.txt")); err == nil {
		defer f.Close()
		w = io.MultiWriter(os.Stdout, f)
	}
	fmt.Fprintln(w)
	printTable(w, rows)
	fmt.Fprintln(w)
	printSkips(w, rows)
	fmt.Fprintf(w, "\nconformance-matrix: %d personalities in %s; output under %s\n", len(rows), time.Since(start).Round(time.Second), o.out)
	passed := verdict(w, rows, len(ps))
	if ctx.Err() != nil {
		fmt.Fprintln(w, "conformance-matrix: interrupted: the table shows what ran before; every cluster is down")
	}
	if !passed || ctx.Err() != nil {
		os.Exit(1)
	}
}

// run runs the groups, at most o.parallel clusters at a time, and
// returns their rows in personality order. The suites mostly wait (for
// the scheduler, for a timeout to prove a pod stays pending), so two
// clusters share two cores with little loss.
func (o *options) run(ctx context.Context, groups []group, total int) []row {
	var (
		mu   sync.Mutex
		rows []row
		n    int
		wg   sync.WaitGroup
	)
	announce := func(p personality) {
		mu.Lock()
		defer mu.Unlock()
		n++
		fmt.Printf("matrix: [%d/%d] %s (cluster %s, driver %s): %s\n", n, total, p.Name, p.Cluster, p.DriverName, p.Description)
	}
	slots := make(chan struct{}, o.parallel)
	for i, g := range groups {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		// Short: a unix socket path has 107 bytes, and the cluster's are
		// <dir>/csi/extraN/nodes/<node>.sock.
		dir := filepath.Join(o.out, fmt.Sprintf("c%d", i+1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			r := o.runGroup(ctx, g, dir, announce)
			mu.Lock()
			rows = append(rows, r...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.Personality.Name, b.Personality.Name) })
	return rows
}

func (o *options) absolute() error {
	for _, p := range []*string{&o.bin, &o.out, &o.root, &o.rbac, &o.mutable} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		out = append(out, f)
	}
	return out
}
