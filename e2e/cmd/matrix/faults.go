package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/fakezones/cluster"
)

// faultRulesName is a personality folder's optional driver fault file
// (driver/faults/README.md): rules that make the driver behave as a
// backend does, compliantly, for example failing a share of calls with
// UNAVAILABLE. They are in force during the personality's e2e run only:
// the Kubernetes sidecars retry such answers as a CO must, but
// zonepath-sanity and upstream csi-sanity call each RPC once and judge its
// answer, so a transient fault there would fail a spec for no defect.
const faultRulesName = "faultRules.yaml"

// noRules is the fault file between e2e runs: in force, empty.
const noRules = "rules: []\n"

// faultRules is the personality's fault file, or "".
func (p personality) faultRules() string {
	if _, err := os.Stat(p.file(faultRulesName)); err != nil {
		return ""
	}
	return p.file(faultRulesName)
}

// checkFaultRules parses the personality's fault file as the driver will,
// so that a mistake stops the matrix before any cluster starts.
func (p personality) checkFaultRules() error {
	path := p.faultRules()
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("personality %s: %w", p.Name, err)
	}
	if _, err := faults.Parse(data); err != nil {
		return fmt.Errorf("personality %s: %s: %w", p.Name, faultRulesName, err)
	}
	return nil
}

// hasFaultRules says whether a member of the group has a fault file: its
// cluster then starts with a fault file the matrix rewrites.
func (g group) hasFaultRules() bool {
	for _, p := range g.Members {
		if p.faultRules() != "" {
			return true
		}
	}
	return false
}

// faultFile is the group's fault file beside the clusters' logs, outside
// the work directory, which up wipes.
func (o *options) faultFile(g group) string {
	return filepath.Join(o.out, "clusters", g.Cluster+"-fault-rules.yaml")
}

// setFaultRules puts data in force in the cluster's controller: it
// replaces the fault file atomically (driver/faults/README.md) and waits
// until the controller has re-read it. Unchanged content is not
// re-read, so it returns at once.
func setFaultRules(ctx context.Context, path, clusterDir string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && string(old) == string(data) {
		return nil
	}
	wait := cluster.FaultReloadWaiter(clusterDir)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return wait(ctx)
}

// withFaultRules runs e2e with p's fault rules in force, when it has any,
// and empties the file again afterwards.
func (o *options) withFaultRules(ctx context.Context, p personality, g group, clusterDir string, run func() suiteResult) suiteResult {
	path := p.faultRules()
	if path == "" {
		return run()
	}
	data, err := os.ReadFile(path)
	var rules *faults.RuleSet
	if err == nil {
		rules, err = faults.Parse(data)
	}
	offset := logOffset(clusterDir)
	if err == nil {
		err = setFaultRules(ctx, o.faultFile(g), clusterDir, data)
	}
	if err != nil {
		return suiteResult{Err: fmt.Errorf("putting %s in force: %w", path, err)}
	}
	fmt.Printf("matrix: %s: e2e with the driver fault rules of %s\n", p.Name, path)
	r := run()
	if err := setFaultRules(context.WithoutCancel(ctx), o.faultFile(g), clusterDir, []byte(noRules)); err != nil && r.Err == nil {
		r.Err = fmt.Errorf("emptying the fault rules after e2e: %w", err)
	}
	fired, err := judgeFired(clusterDir, o.faultFile(g), offset, rules)
	fmt.Printf("matrix: %s: faults injected during e2e (%s): %s\n", p.Name, cluster.ControllerLog(clusterDir), fired)
	if err != nil && r.Err == nil {
		r.Err = err
	}
	return r
}
