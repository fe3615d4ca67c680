package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/fakezones/chaos"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// chaosCommand is make chaos: a cluster of its own, a workload of
// snapshot → restore cycles while components are SIGKILLed, then an
// orphan audit of both ends (package chaos).
func chaosCommand() *cobra.Command {
	var (
		o                chaos.Options
		file             string
		tolerateUpstream bool
	)
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Kill the cluster's components under a snapshot → restore workload, then audit the driver and the API for orphans and stuck objects",
		Long: `chaos starts a fake-zones cluster of its own (in --output-dir/cluster), runs snapshot → restore
cycles across zones and regions (WaitForFirstConsumer and Immediate, zonal, region-wide and an
exhausted zone, lost replies, admin edits between a lost reply and its retry) while it SIGKILLs and
restarts, one at a time, the zonepath controller, the provisioner, snapshotter and attacher (not the
resizer), the scheduler, snapshot-controller,
kube-apiserver and etcd. Then the workload deletes everything, and after a bounded settle time it
audits both ends: the driver's volumes and snapshots against the API objects and back, restores
against their snapshots' topology, anything left, and cycles that failed. It prints a table per
component and per scenario, and exits non-zero on any finding. The cluster is always stopped.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := chaos.DefaultCluster()
			if file != "" {
				cl, err := spec.Load(file)
				if err != nil {
					return err
				}
				f = cl.File
			}
			cl, err := f.Expand()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("seed") {
				o.Seed = rand.Uint64() % 1_000_000
			}
			o.Cluster, o.Out = cl, cmd.OutOrStdout()
			paths := []*string{&o.OutputDir, &o.BinDir, &o.CRDDir}
			if o.RBACDir != "" {
				paths = append(paths, &o.RBACDir)
			}
			if err := absPaths(paths...); err != nil {
				return err
			}
			// client-go's complaints while kube-apiserver is killed under
			// it would interleave with the progress lines.
			logFile, err := quietClientLogs(o.OutputDir)
			if err != nil {
				return err
			}
			defer logFile.Close()
			findings, err := chaos.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			return chaos.Verdict(findings, tolerateUpstream)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.OutputDir, "output-dir", "_output/chaos", "directory for the cluster, the fault rules and report.txt; wiped first")
	fl.StringVar(&o.BinDir, "bin-dir", binDir(), "directory of the components (make components, make build)")
	fl.StringVar(&o.CRDDir, "crd-dir", filepath.Join(binDir(), "crds"), "directory of the snapshot CRDs to install (make crds)")
	fl.StringVar(&o.RBACDir, "rbac", "", "kustomization of ServiceAccounts and roles (deploy/rbac), as for up: the components run as its ServiceAccounts, so a verb a retry needs and the roles lack fails the run; without it every component is admin")
	fl.StringVar(&file, "config", "", "cluster file (fakezones/spec); it needs two zones in one region, and a zone with a snapshot quota for the exhausted scenario (default: 2 regions, 4 zones, 2 nodes each, snapshotQuotas zone-d: 1). "+
		"Its driver section may reshape the driver as a personality does (e2e/testdata/personalities), but the audit judges each restore against its content's nodeAffinity, so snapshots without accessible_topology (snapshots.defaultScope: global) cannot be judged")
	fl.StringVar(&o.FeatureGates, "feature-gates", "VolumeSnapshotTopology=true", "feature gates of zonepath's own controllers")
	fl.DurationVar(&o.Duration, "duration", 10*time.Minute, "bound of the whole run, the cluster's start and stop included; longer for a longer soak, 5m for CI (the least that gives a stalled cycle time to fail)")
	fl.DurationVar(&o.Settle, "settle", 0, "bound of the wait for the workload's deletions before the audit (default: an eighth of --duration, 60s to 90s)")
	fl.DurationVar(&o.KillEvery, "kill-every", 3*time.Second, "time from one kill to the next, at least half a second after the killed component is back")
	fl.IntVar(&o.Lanes, "lanes", 2, "plain snapshot → restore cycles running at once, besides the lane of lost replies and edits and the exhausted zone's")
	fl.Uint64Var(&o.Seed, "seed", 0, "seed of the kill order, to repeat a run's order (default: random, printed)")
	fl.DurationVar(&o.MaxBackoff, "max-backoff", 20*time.Second, "the sidecars' and snapshot-controller's --retry-interval-max and the provisioner's --snapshot-orphan-sweep-interval: "+
		"upstream's 5m would leave objects waiting past the run")
	fl.BoolVar(&tolerateUpstream, "tolerate-upstream-defects", false, "exit 0 when the only findings are known defects of upstream components (rule upstream-defect), which are still listed")
	return cmd
}

// quietClientLogs sends klog's output (client-go's retries and watch
// errors) to a file beside the output directory, which Run wipes.
func quietClientLogs(outputDir string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(outputDir), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(outputDir + "-client.log")
	if err != nil {
		return nil, err
	}
	klog.LogToStderr(false)
	klog.SetOutput(f)
	return f, nil
}
