//go:build livecluster

// BenchmarkSchedulerThroughput is make bench-scheduler: it starts a
// fake-zones cluster from the binaries in ZONEPATH_BIN and fails when a
// target of issue 14 is missed. Flags after -args size it. A benchmark,
// not a test, so that a run of the cluster tests (go test -tags
// livecluster) leaves it out: it runs with -bench only, once
// (-benchtime=1x), its rounds being its repetitions.
package schedbench_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/zonepath/zonepath/bench/schedbench"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/clustertest"
	"github.com/zonepath/zonepath/fakezones/objects"
	"github.com/zonepath/zonepath/fakezones/spec"
)

var (
	regions = flag.Int("regions", 3, "regions the zones are spread over")
	zones   = flag.Int("zones", 30, "zones, each with its own zonal snapshot")
	nodes   = flag.Int("nodes", 5000, "nodes in all, spread evenly over the zones (rounded up)")
	pods    = flag.Int("pods", 1000, "pods of each class (plain, snapshot) per round")
	rounds  = flag.Int("rounds", 3, "rounds; each runs both schedulers, in turns")
	workers = flag.Int("workers", 8, "API writes in flight when creating and deleting")
	binders = flag.Int("binders", 32, "claims the binder binds at a time")
	timeout = flag.Duration("phase-timeout", 5*time.Minute, "how long one phase may take to schedule its pods")
)

func BenchmarkSchedulerThroughput(b *testing.B) {
	t := b
	perZone := (*nodes + *zones - 1) / *zones
	c := clustertest.Start(t, spec.File{Regions: *regions, Zones: *zones, NodesPerZone: perZone}, "VolumeSnapshotTopology=true")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := fastClient(t, c.Kubeconfig)
	nodeLabels, err := schedbench.Nodes(ctx, kube, *binders)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("cluster: %d nodes in %d zones, %d regions, ready in %s; load %s\n",
		len(nodeLabels), *zones, *regions, c.ReadyIn.Round(time.Second), schedbench.Load())

	t0 := time.Now()
	topology := snapshots(t, c)
	fmt.Printf("snapshots: %d (a zonal one per zone, a regional one per region) in %s\n", len(topology), time.Since(t0).Round(time.Second))

	pass, err := schedbench.Run(ctx, schedbench.Config{Kube: kube, Kubeconfig: c.Kubeconfig, BinDir: clustertest.BinDir(t),
		Dir: t.TempDir(), Namespace: clustertest.Namespace, Topology: topology, Nodes: nodeLabels,
		Regions: *regions, Zones: *zones, Pods: *pods, Rounds: *rounds, Workers: *workers, Binders: *binders,
		PhaseTimeout: *timeout, Out: os.Stdout, Errors: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	if !pass {
		t.Fail()
	}
}

// fastClient is a client for the benchmark's own writes, whose rate
// limit is far above what the benchmark needs, so that creating pods and
// binding claims never waits on the client.
func fastClient(t testing.TB, kubeconfig string) kubernetes.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 5000, 5000
	return kubernetes.NewForConfigOrDie(cfg)
}

// snapshots takes, through the cluster's real provisioner and
// snapshotter, a snapshot of a volume in every zone (its content's
// nodeAffinity is that zone) and, of the first zone of every region, a
// regional one (that region), and returns each snapshot's nodeAffinity.
func snapshots(t testing.TB, c *clustertest.Cluster) map[string][]v1.TopologySelectorTerm {
	ctx := context.Background()
	out := map[string][]v1.TopologySelectorTerm{}
	add := func(name string, content *unstructured.Unstructured) {
		terms, err := snapshotapi.NodeAffinity(content)
		if err != nil || len(terms) == 0 {
			t.Fatalf("snapshot %s: nodeAffinity %v (%v): the snapshotter did not record its topology", name, terms, err)
		}
		out[name] = terms
	}
	for z := range *zones {
		zone := spec.ZoneName(z)
		class := clustertest.ZonalStorageClass("schedbench-"+zone, objects.Driver, zone)
		if _, err := c.Kube.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvc := c.Provision(t, class.Name, "").Spec.ClaimRef.Name
		add("snap-"+pvc, c.Snapshot(t, pvc))
		if z < *regions {
			name := "snap-region-" + spec.RegionName(z)
			add(name, c.SnapshotOfClass(t, name, pvc, "zonepath-region"))
		}
	}
	return out
}
