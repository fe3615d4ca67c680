package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/zonepath/zonepath/e2e/junit"
	"github.com/zonepath/zonepath/e2e/logrun"
)

// options are the command's flags, paths made absolute.
type options struct {
	bin, out, root, rbac, only string
	mutable                    string // --csi.testvolumemutableparameters for zonepath-sanity
	parallel                   int
}

// runGroup brings a group's cluster up in dir, runs each member's suites
// on it, and brings it down again whatever happened. A cluster that does
// not come up fails every member.
func (o *options) runGroup(ctx context.Context, g group, dir string, announce func(personality)) []row {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return failAll(g, err)
	}
	logs := filepath.Join(o.out, "clusters")
	_ = os.MkdirAll(logs, 0o755)
	fmt.Printf("matrix: cluster %s up (%s) in %s\n", g.Cluster, g.ClusterFile, dir)
	start := time.Now()
	up := []string{"up", "--work-dir", dir, "--config", g.ClusterFile, "--bin-dir", o.bin, "--crd-dir", filepath.Join(o.bin, "crds")}
	if o.rbac != "" {
		up = append(up, "--rbac", o.rbac)
	}
	if g.hasFaultRules() {
		if err := os.WriteFile(o.faultFile(g), []byte(noRules), 0o644); err != nil {
			return failAll(g, err)
		}
		up = append(up, "--driver-fault-rules", o.faultFile(g))
	}
	defer o.down(g, dir, logs)
	if err := o.command(context.WithoutCancel(ctx), filepath.Join(logs, g.Cluster+"-up.log"), "zonepath-cluster", up...); err != nil {
		return failAll(g, fmt.Errorf("cluster %s up: %w (see %s)", g.Cluster, err, filepath.Join(logs, g.Cluster+"-up.log")))
	}
	fmt.Printf("matrix: cluster %s up in %s\n", g.Cluster, time.Since(start).Round(time.Second))
	var rows []row
	for _, p := range g.Members {
		if ctx.Err() != nil {
			break
		}
		announce(p)
		rows = append(rows, o.runPersonality(ctx, p, g, dir))
	}
	return rows
}

func failAll(g group, err error) []row {
	var rows []row
	for _, p := range g.Members {
		rows = append(rows, row{Personality: p, Sanity: suiteResult{Err: err}, E2E: suiteResult{Err: err}})
	}
	return rows
}

func (o *options) down(g group, dir, logs string) {
	if err := o.command(context.Background(), filepath.Join(logs, g.Cluster+"-down.log"), "zonepath-cluster", "down", "--work-dir", dir); err != nil {
		fmt.Fprintf(os.Stderr, "matrix: down of cluster %s in %s failed: %v\n", g.Cluster, dir, err)
		return
	}
	// etcd's data is 65 MB a cluster and tells nothing the logs do not:
	// eight of them would fill CI's artifacts.
	if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
		fmt.Fprintf(os.Stderr, "matrix: %v\n", err)
	}
	fmt.Printf("matrix: cluster %s down\n", g.Cluster)
}

// runPersonality runs zonepath-sanity, then the e2e suite, for one
// personality on its cluster; output under <out>/<name>/.
func (o *options) runPersonality(ctx context.Context, p personality, g group, cluster string) row {
	dir := filepath.Join(o.out, p.Name)
	r := row{Personality: p}
	if err := os.RemoveAll(dir); err != nil {
		r.Sanity.Err, r.E2E.Err = err, err
		return r
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Sanity.Err, r.E2E.Err = err, err
		return r
	}
	start := time.Now()
	r.Sanity = o.suite(ctx, p, sanitySuite, dir, func(junitFile string) (string, []string, error) {
		args, err := o.sanityArgs(ctx, p, cluster, dir, junitFile)
		return "zonepath-sanity", args, err
	})
	fmt.Printf("matrix: %s: sanity %s in %s\n", p.Name, r.Sanity.counts(), r.Sanity.Took.Round(time.Second))
	if ctx.Err() == nil {
		r.E2E = o.withFaultRules(ctx, p, g, cluster, func() suiteResult {
			return o.suite(ctx, p, e2eSuite, dir, func(junitFile string) (string, []string, error) {
				return "zonepath-e2e", o.e2eArgs(p, cluster, dir, junitFile), nil
			})
		})
		fmt.Printf("matrix: %s: e2e %s in %s\n", p.Name, r.E2E.counts(), r.E2E.Took.Round(time.Second))
	} else {
		r.E2E.Err = ctx.Err()
	}
	r.Took = time.Since(start)
	if err := writeSkips(filepath.Join(dir, "skips.txt"), r); err != nil {
		fmt.Fprintf(os.Stderr, "matrix: %s: %v\n", p.Name, err)
	}
	return r
}

// suite runs one suite's binary with the arguments args gives for its
// JUnit file, and judges the JUnit file. A run that exits non-zero
// without a failed spec (a crash, a suite-level error) is an error.
func (o *options) suite(ctx context.Context, p personality, suite, dir string, args func(junitFile string) (string, []string, error)) suiteResult {
	start := time.Now()
	junitFile := filepath.Join(dir, suite+".xml")
	log := filepath.Join(dir, suite+".txt")
	name, argv, err := args(junitFile)
	if err != nil {
		return suiteResult{Err: err, Took: time.Since(start)}
	}
	runErr := o.command(ctx, log, name, argv...)
	report, err := junit.Load(junitFile)
	if err != nil {
		return suiteResult{Err: fmt.Errorf("no JUnit (%v; see %s)", runErr, log), Took: time.Since(start)}
	}
	r := judge(suite, report, p.Lacks)
	if runErr != nil && r.Failed == 0 {
		r.Err = fmt.Errorf("%w without a failed spec (see %s)", runErr, log)
	}
	r.Took = time.Since(start)
	return r
}

// sanityArgs: zonepath-sanity against the personality's driver as the
// cluster runs it, the way hack/conformance.sh step 3 runs it: its
// controller socket and the node plugin of a node in sanity.yaml's first
// segment. Not --csi.testnodevolumeattachlimit: upstream's attach-limit
// test assumes a node with nothing attached, which a personality with a
// volume attached from the start is not; the others add it in their
// sanityFlags.
func (o *options) sanityArgs(ctx context.Context, p personality, cluster, dir, junitFile string) ([]string, error) {
	controller, err := controllerSocket(cluster, p.DriverName)
	if err != nil {
		return nil, err
	}
	seg, err := firstSegment(p.file("sanity.yaml"))
	if err != nil {
		return nil, err
	}
	node, err := nodeSocketIn(ctx, controller, seg)
	if err != nil {
		return nil, err
	}
	args := []string{
		"--csi.endpoint", "unix://" + node, "--csi.controllerendpoint", "unix://" + controller,
		"--csi.mountdir", filepath.Join(dir, "sanity", "mnt"), "--csi.stagingdir", filepath.Join(dir, "sanity", "staging"),
		"--zonepath.config", p.file("sanity.yaml"),
		"--ginkgo.junit-report", junitFile, "--ginkgo.no-color",
	}
	// Every personality is the zonepath binary, with MODIFY_VOLUME: the
	// mutable parameters it accepts let the ModifyVolume extension and the
	// idempotency table's mutable-parameter retry run, as in make sanity.
	if o.mutable != "" {
		args = append(args, "--csi.testvolumemutableparameters", o.mutable)
	}
	return append(args, p.SanityFlags...), os.MkdirAll(filepath.Join(dir, "sanity"), 0o755)
}

// e2eArgs: the e2e suite with the personality's driver and extension
// files, as hack/conformance.sh step 4 runs it, and its e2eFlags.
func (o *options) e2eArgs(p personality, cluster, dir, junitFile string) []string {
	args := []string{
		"--kubeconfig", filepath.Join(cluster, "kubeconfig", "admin"),
		"--storage.testdriver", p.file("driver.yaml"), "--zonepath.driver-ext", p.file("ext.yaml"),
		"--ginkgo.junit-report", junitFile, "--ginkgo.no-color", "--e2e-output-dir", filepath.Join(dir, "e2e"),
	}
	return append(args, p.E2EFlags...)
}

// command runs one of the built binaries with its output in log.
func (o *options) command(ctx context.Context, log, name string, args ...string) error {
	return logrun.Run(ctx, log, filepath.Join(o.bin, name), args...)
}
