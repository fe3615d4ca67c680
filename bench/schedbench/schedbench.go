package schedbench

import (
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// Config is one benchmark on a running fake-zones cluster whose nodes are
// ready (Nodes) and whose snapshots exist.
type Config struct {
	Kube kubernetes.Interface
	// Kubeconfig is what the schedulers run with.
	Kubeconfig string
	// BinDir holds the schedulers; Dir gets their configs and logs.
	BinDir, Dir string
	// Namespace is that of the snapshots, and so of the claims and pods.
	Namespace string
	// Topology is each snapshot's nodeAffinity, by VolumeSnapshot name.
	Topology map[string][]v1.TopologySelectorTerm
	// Nodes are the labels of every node, by name, as Nodes returns them.
	Nodes map[string]labels.Set
	// Regions and Zones describe the cluster in the summary.
	Regions, Zones int
	// Pods is how many pods of each class a round schedules.
	Pods, Rounds int
	// Workers create and delete that many objects at a time; Binders
	// bind that many claims at a time.
	Workers, Binders int
	// PhaseTimeout bounds one phase's scheduling.
	PhaseTimeout time.Duration
	// Out gets the progress, the table and the verdicts; Errors the
	// binder's failures.
	Out, Errors io.Writer
}

// Run compares zonepath-scheduler with SnapshotTopology against upstream
// kube-scheduler on c's cluster, writes the table and the verdicts to
// c.Out, and says whether every target was met; an error is a run that
// could not measure.
func Run(ctx context.Context, c Config) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	class := newStorageClass("schedbench")
	if _, err := c.Kube.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return false, err
	}
	b := &binder{kube: c.Kube, nodes: c.Nodes, workers: c.Binders, errors: c.Errors}
	go func() {
		// Without the binder the snapshot phase times out; say why.
		if err := b.run(ctx); err != nil {
			fmt.Fprintln(c.Errors, "binder stopped:", err)
		}
	}()
	phases, err := (&bench{Config: c, storageClass: class.Name}).run(ctx, both, c.Rounds)
	if err != nil {
		return false, err
	}
	lines, err := summarize(phases)
	if err != nil {
		return false, err
	}
	with, without := both[0].Binary, both[1].Binary
	fmt.Fprintf(c.Out, "\n%d nodes, %d zones in %d regions; per round %d plain + %d snapshot pods; %d rounds; %d claims bound; load %s\n",
		len(c.Nodes), c.Zones, c.Regions, c.Pods, c.Pods, c.Rounds, b.claimsBound(), Load())
	return writeTable(c.Out, lines, with, without, check(lines, with, without, targets)), nil
}
