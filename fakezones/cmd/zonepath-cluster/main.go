// Command zonepath-cluster brings a fake-zones Kubernetes cluster up and
// down: a real control plane and kwok nodes in several zones, the
// snapshot controller, the CSI sidecars and the zonepath driver, all local
// processes. No Docker, no registry.
//
//	zonepath-cluster up --zones 3 --nodes-per-zone 2
//	kubectl --kubeconfig _output/fakezones/kubeconfig/admin get nodes -L topology.kubernetes.io/zone
//	zonepath-cluster zone down zone-b   # and zone up zone-b
//	zonepath-cluster down
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/fakezones/cluster"
	"github.com/zonepath/zonepath/fakezones/kubelet"
	"github.com/zonepath/zonepath/fakezones/spec"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "devel"

func main() {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	root := &cobra.Command{
		Use:           "zonepath-cluster",
		Short:         "A local multi-zone Kubernetes cluster of processes, for zonepath and any CSI test",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(upCommand(), downCommand(), statusCommand(), zoneCommand(), chaosCommand(), kubeletCommand())
	stopProfile := cpuProfile()
	err := root.ExecuteContext(ctx)
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonepath-cluster:", err)
		os.Exit(1)
	}
}

// cpuProfile writes a CPU profile of this command to
// $ZONEPATH_CPUPROFILE/<subcommand>.pprof when that directory is set; up's
// children inherit it, so one variable profiles up and the kubelet
// stand-in (make bench-fakezones).
func cpuProfile() (stop func()) {
	dir := os.Getenv("ZONEPATH_CPUPROFILE")
	if dir == "" || len(os.Args) < 2 {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, os.Args[1]+".pprof"))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zonepath-cluster: not profiling:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

const defaultWorkDir = "_output/fakezones"

func upCommand() *cobra.Command {
	var (
		o          cluster.Options
		file       string
		overrides  spec.File
		maxVolumes int64
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a cluster and wait until it is ready",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := loadCluster(cmd, file, overrides, maxVolumes)
			if err != nil {
				return err
			}
			o.Cluster, o.Out = cl, cmd.OutOrStdout()
			paths := []*string{&o.WorkDir, &o.BinDir, &o.CRDDir}
			if o.DriverFaultRules != "" {
				// The controller re-reads it from its own working directory.
				paths = append(paths, &o.DriverFaultRules)
			}
			if o.RBACDir != "" {
				paths = append(paths, &o.RBACDir)
			}
			if err := absPaths(paths...); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "fakezones: %d regions, %d zones, %d nodes in %s\n", cl.Regions, cl.Zones, len(cl.Nodes), o.WorkDir)
			s, err := cluster.Up(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprint(o.Out, s.Summary())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.WorkDir, "work-dir", defaultWorkDir, "directory for the cluster's logs, kubeconfigs, certificates and data; wiped on up")
	f.StringVar(&o.BinDir, "bin-dir", binDir(), "directory of the components (make components, make build)")
	f.StringVar(&o.CRDDir, "crd-dir", filepath.Join(binDir(), "crds"), "directory of the snapshot CRDs to install (make crds)")
	f.StringVar(&o.FeatureGates, "feature-gates", "VolumeSnapshotTopology=true", "feature gates of zonepath's own controllers")
	f.StringVar(&o.DriverFaultRules, "driver-fault-rules", "", "fault rules file (driver/faults/README.md) for the zonepath controller, re-read when it changes: makes the driver break a rule on purpose; never written (zone down|up keeps its outage rules in a file of the work directory)")
	f.StringVar(&o.RBACDir, "rbac", "", "kustomization of ServiceAccounts and roles (deploy/rbac), applied before the components start; "+
		"snapshot-controller, every driver's sidecars and zonepath-scheduler then run as its ServiceAccounts of "+cluster.Namespace+
		" (client certificates for system:serviceaccount:"+cluster.Namespace+":<name>), with leader election there, "+
		"and the API server audits their calls into <work-dir>/audit/audit.log; kwok and the kubelet stand-in stay admin, "+
		"as they stand in for nodes, not for deploy/'s components. Without it every component is admin")
	f.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "give up and stop everything when not ready by then")
	f.StringVar(&file, "config", "", "cluster file (regions, zones, nodesPerZone, maxVolumesPerNode, snapshotQuotas, capacities, nodes, extraDrivers); flags override it")
	f.IntVar(&overrides.Regions, "regions", 0, "regions the zones are spread over (default 1)")
	f.IntVar(&overrides.Zones, "zones", 0, "zones (default 3)")
	f.IntVar(&overrides.NodesPerZone, "nodes-per-zone", 0, "kwok nodes per zone (default 2)")
	f.Int64Var(&maxVolumes, "max-volumes-per-node", -1, "attach limit of every node (default: the file's, else none)")
	return cmd
}

// loadCluster reads the cluster file and applies the flags that were set.
func loadCluster(cmd *cobra.Command, path string, o spec.File, maxVolumes int64) (*spec.Cluster, error) {
	var f spec.File
	if path != "" {
		cl, err := spec.Load(path)
		if err != nil {
			return nil, err
		}
		f = cl.File
	}
	flags := cmd.Flags()
	if flags.Changed("regions") {
		f.Regions = o.Regions
	}
	if flags.Changed("zones") {
		f.Zones = o.Zones
	}
	if flags.Changed("nodes-per-zone") {
		f.NodesPerZone = o.NodesPerZone
	}
	if flags.Changed("max-volumes-per-node") {
		f.MaxVolumesPerNode = maxVolumes
	}
	return f.Expand()
}

func downCommand() *cobra.Command {
	return workDirCommand("down", "Stop the cluster's processes, newest first; logs stay", func(cmd *cobra.Command, dir string) error {
		if err := absPaths(&dir); err != nil {
			return err
		}
		t0 := time.Now()
		if err := cluster.Down(context.Background(), dir, cmd.OutOrStdout()); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "fakezones: down in %.2fs\n", time.Since(t0).Seconds())
		return nil
	})
}

func statusCommand() *cobra.Command {
	return workDirCommand("status", "Say which of the cluster's processes run", func(cmd *cobra.Command, dir string) error {
		s, err := cluster.ReadState(dir)
		if err != nil {
			return err
		}
		if s == nil {
			return fmt.Errorf("no cluster in %s", dir)
		}
		for _, p := range s.Processes {
			state := "stopped"
			if p.Alive() {
				state = "running"
				if peak, err := p.PeakRSS(); err == nil {
					state += fmt.Sprintf(", peak RSS %d MiB", peak>>20)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%-36s pid %-8d %s\n", p.Name, p.PID, state)
		}
		fmt.Fprint(cmd.OutOrStdout(), s.Summary())
		return nil
	})
}

// zoneCommand takes a zone of a running cluster down and up again.
func zoneCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "zone",
		Short: "Take a zone of a running cluster down (an outage) or bring it back up",
		Long: "zone down ZONE writes an outage rule (driver/faults/README.md) into <work-dir>/driver/outage-rules.yaml, the " +
			"fault file the zonepath controller re-reads beside --driver-fault-rules' (never written), so the zone's volumes and snapshot copies are inaccessible and nothing is placed there, and makes " +
			"the zone's kwok nodes NotReady; zone up ZONE undoes both. The zone's data stays. Both are idempotent.",
	}
	for _, down := range []bool{true, false} {
		use := map[bool]string{true: "down", false: "up"}[down]
		var dir string
		sub := &cobra.Command{
			Use:   use + " ZONE",
			Short: map[bool]string{true: "Take ZONE (zone or region/zone) down", false: "Bring ZONE back up"}[down],
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := absPaths(&dir); err != nil {
					return err
				}
				return cluster.SetZone(cmd.Context(), dir, args[0], down, cmd.OutOrStdout())
			},
		}
		sub.Flags().StringVar(&dir, "work-dir", defaultWorkDir, "the cluster's work directory")
		cmd.AddCommand(sub)
	}
	return cmd
}

// workDirCommand is a subcommand whose only flag is the cluster's
// --work-dir.
func workDirCommand(use, short string, run func(cmd *cobra.Command, dir string) error) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		RunE:  func(cmd *cobra.Command, _ []string) error { return run(cmd, dir) },
	}
	cmd.Flags().StringVar(&dir, "work-dir", defaultWorkDir, "the cluster's work directory")
	return cmd
}

// kubeletCommand is the kubelet stand-in that "up" starts; it is not for
// people. It starts as zonepath's other Kubernetes components do (package
// bootstrap), so it takes their logging flags.
func kubeletCommand() *cobra.Command {
	var dir, kubeconfig, dataDir string
	start := bootstrap.NewCommand("zonepath-kubelet", version, nil)
	cmd := &cobra.Command{
		Use:    "kubelet",
		Short:  "Serve and register the node plugins of a cluster's fake nodes (started by up)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return start.RunE(func(ctx context.Context) error {
				cl, err := spec.Load(filepath.Join(dir, "cluster.yaml"))
				if err != nil {
					return err
				}
				topo, err := world.Load(filepath.Join(dir, "driver", "topology.yaml"))
				if err != nil {
					return err
				}
				// It registers every node at once: far more calls than
				// client-go's default rate allows.
				cfg, err := bootstrap.RESTConfig(kubeconfig, 500, 1000)
				if err != nil {
					return err
				}
				kube, err := kubernetes.NewForConfig(cfg)
				if err != nil {
					return err
				}
				return kubelet.Run(ctx, kubelet.Config{Cluster: cl, Topology: topo, Kube: kube, WorkDir: dir, DataDir: dataDir})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "work-dir", "", "the cluster's work directory")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig with rights on nodes and CSINodes")
	f.StringVar(&dataDir, "data-dir", "", "the driver controller's data directory")
	start.AddFlags(f)
	return cmd
}

// binDir is the directory of this binary: make puts every component
// beside it.
func binDir() string {
	self, err := os.Executable()
	if err != nil {
		return "bin"
	}
	return filepath.Dir(self)
}

func absPaths(paths ...*string) error {
	for _, p := range paths {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	return nil
}
