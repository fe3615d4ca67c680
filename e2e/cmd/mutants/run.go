package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/e2e/logrun"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// result is what one mutant's run showed.
type result struct {
	mutant mutant
	// failed are the scenarios that failed, sorted.
	failed []string
	// err is a run that could not say anything: the cluster did not
	// come up, or the suite wrote no JUnit file.
	err  error
	took time.Duration
}

func (r result) caught() bool {
	if r.err != nil {
		return false
	}
	for _, c := range r.mutant.catchers {
		if !slices.Contains(r.failed, c) {
			return false
		}
	}
	return true
}

func (r result) verdict() string {
	switch {
	case r.err != nil:
		return "ERROR: " + r.err.Error()
	case r.caught():
		return "caught"
	default:
		return "NOT CAUGHT"
	}
}

// run sets a mutant's cluster up, runs the suite on it and brings the
// cluster down again, whatever happened.
func (o *options) run(ctx context.Context, m mutant) result {
	start := time.Now()
	r := result{mutant: m}
	dir := filepath.Join(o.out, m.name)
	if err := os.RemoveAll(dir); err != nil {
		r.err = err
		return r
	}
	junit := filepath.Join(dir, "junit.xml")
	r.err = o.setUpAndTest(ctx, m, dir, junit)
	if r.err == nil {
		r.failed, r.err = failedScenarios(junit)
	}
	r.took = time.Since(start)
	return r
}

func (o *options) setUpAndTest(ctx context.Context, m mutant, dir, junit string) error {
	up, err := o.upArgs(m, dir)
	if err != nil {
		return err
	}
	work := filepath.Join(dir, "cluster")
	if err := o.command(context.WithoutCancel(ctx), dir, "up.log", "zonepath-cluster", append([]string{"up", "--work-dir", work}, up...)...); err != nil {
		o.down(work, dir)
		return fmt.Errorf("cluster up: %w (see %s)", err, filepath.Join(dir, "up.log"))
	}
	defer o.down(work, dir)
	// The suite fails on a mutant by design: only the JUnit file tells.
	_ = o.command(ctx, dir, "e2e.txt", "zonepath-e2e", o.suiteArgs(m.run, work, junit)...)
	if _, err := os.Stat(junit); err != nil {
		return fmt.Errorf("the suite wrote no JUnit (see %s)", filepath.Join(dir, "e2e.txt"))
	}
	return nil
}

// upArgs writes the mutant's cluster file, fault rules and bin directory
// and returns zonepath-cluster up's flags for them.
func (o *options) upArgs(m mutant, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	clusterFile, err := writeCluster(m, dir)
	if err != nil {
		return nil, err
	}
	bin, err := o.binDir(m, dir)
	if err != nil {
		return nil, err
	}
	args := []string{"--config", clusterFile, "--feature-gates", m.run.featureGates,
		"--bin-dir", bin, "--crd-dir", filepath.Join(o.bin, "crds")}
	if o.rbac != "" {
		// The components under deploy/'s identities, as in make conformance.
		args = append(args, "--rbac", o.rbac)
	}
	if m.faults != "" {
		faults := filepath.Join(dir, "faults.yaml")
		if err := os.WriteFile(faults, []byte(m.faults), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--driver-fault-rules", faults)
	}
	return args, nil
}

func (o *options) suiteArgs(r *suiteRun, work, junit string) []string {
	args := []string{"--kubeconfig", filepath.Join(work, "kubeconfig", "admin"),
		"--storage.testdriver", r.driver, "--zonepath.driver-ext", r.ext,
		"--ginkgo.junit-report", junit, "--ginkgo.no-color"}
	if r.labelFilter != "" {
		args = append(args, "--ginkgo.label-filter", r.labelFilter)
	}
	return args
}

// writeCluster writes the run's cluster file with the mutant's changes.
func writeCluster(m mutant, dir string) (string, error) {
	cl, err := spec.Load(m.run.cluster)
	if err != nil {
		return "", err
	}
	f := cl.File
	if m.cluster != nil {
		m.cluster(&f)
	}
	data, err := yaml.Marshal(f)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "cluster.yaml")
	return path, os.WriteFile(path, data, 0o644)
}

// binDir is the bin directory itself, or for a mutant with upstream or
// replaced components a directory of links to it without zonepath's
// versions, or with the replacements under the components' names.
func (o *options) binDir(m mutant, dir string) (string, error) {
	if len(m.upstream) == 0 && len(m.replaced) == 0 {
		return o.bin, nil
	}
	entries, err := os.ReadDir(o.bin)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	for _, e := range entries {
		if slices.Contains(m.upstream, e.Name()) {
			continue
		}
		target := filepath.Join(o.bin, e.Name())
		if r, ok := m.replaced[e.Name()]; ok {
			target = filepath.Join(o.bin, r)
		}
		if err := os.Symlink(target, filepath.Join(bin, e.Name())); err != nil {
			return "", err
		}
	}
	for name, r := range m.replaced {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return "", fmt.Errorf("replacing %s by %s: %w (make e2e-mutants builds it)", name, r, err)
		}
	}
	return bin, nil
}

func (o *options) down(work, dir string) {
	if err := o.command(context.Background(), dir, "down.log", "zonepath-cluster", "down", "--work-dir", work); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-mutants: down of %s failed: %v\n", work, err)
	}
}

// command runs one of the built binaries with its output in dir/log.
func (o *options) command(ctx context.Context, dir, log, name string, args ...string) error {
	return logrun.Run(ctx, filepath.Join(dir, log), filepath.Join(o.bin, name), args...)
}
