package schedbench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	corev1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/zonepath/zonepath/fakezones/proc"
)

// bench runs the benchmark's phases; storageClass is its claims' class.
type bench struct {
	Config
	storageClass string
}

// run runs rounds rounds, each scheduler once per round, and returns
// every phase. The order turns every other round (A B, B A, A B, ...):
// on a shared machine the load drifts, and a fixed order would hand one
// scheduler the same neighbour every round (and the after-effects of the
// other's phases).
func (b *bench) run(ctx context.Context, schedulers []scheduler, rounds int) ([]measured, error) {
	var out []measured
	for r := 1; r <= rounds; r++ {
		order := slices.Clone(schedulers)
		if r%2 == 0 {
			slices.Reverse(order)
		}
		for _, s := range order {
			phases, err := b.round(ctx, s, r)
			out = append(out, phases...)
			if err != nil {
				return out, fmt.Errorf("round %d, %s: %w", r, s.Binary, err)
			}
		}
	}
	return out, nil
}

// round schedules the plain pods, then the snapshot pods, then deletes
// everything it created. The plain pods stay on their nodes while the
// snapshot pods are scheduled, as a cluster's running pods do.
func (b *bench) round(ctx context.Context, s scheduler, r int) (phases []measured, err error) {
	defer func() {
		if cerr := b.cleanup(ctx); err == nil {
			err = cerr
		}
	}()
	for _, class := range []podClass{plainPods, snapshotPods} {
		p, err := b.phase(ctx, s, r, class)
		if err != nil {
			return phases, fmt.Errorf("%s pods: %w", class, err)
		}
		fmt.Fprintf(b.Out, "round %d  %-18s  %-8s  %d pods in %6.2fs = %6.1f pods/s  p99 algorithm %-8s attempt %-8s  load %s\n",
			r, s.Binary, class, p.Pods, p.Elapsed.Seconds(), rate(p.Pods-1, p.Elapsed),
			seconds(p.Algorithm.quantile(0.99)), seconds(p.Attempt.quantile(0.99)), Load())
		phases = append(phases, p)
	}
	return phases, nil
}

// phase creates the pods of one class while no scheduler serves their
// profile, then starts the scheduler and times it through the backlog: a
// scheduler's own throughput, not the rate at which pods are created.
// Each phase runs its own scheduler process, so its metrics cover
// exactly that phase.
func (b *bench) phase(ctx context.Context, s scheduler, round int, class podClass) (measured, error) {
	w := workload{Namespace: b.Namespace, Phase: fmt.Sprintf("r%d-%s", round, s.Binary), SchedulerName: s.profileName(),
		Class: class, Pods: b.Pods, StorageClass: b.storageClass, Snapshots: b.snapshotNames()}
	watch, err := startWatch(ctx, b.Kube, b.Namespace, phaseLabel+"="+w.Phase+","+classLabel(class))
	if err != nil {
		return measured{}, err
	}
	defer watch.stop()
	if err := w.create(ctx, b.Kube, b.Workers); err != nil {
		return measured{}, err
	}
	sched, err := s.start(ctx, b.BinDir, b.Dir, b.Kubeconfig)
	if err != nil {
		return measured{}, err
	}
	defer sched.stop()
	if err := watch.waitScheduled(ctx, b.Pods, b.PhaseTimeout); err != nil {
		return measured{}, fmt.Errorf("%w; last lines of %s:\n%s", err, sched.proc.Log, proc.Tail(sched.proc.Log, 15))
	}
	algorithm, attempt, err := sched.latency(s.profileName())
	if err != nil {
		return measured{}, err
	}
	p := measured{Scheduler: s.Binary, Class: class, Round: round, Pods: b.Pods, Elapsed: watch.elapsed(),
		Algorithm: algorithm, Attempt: attempt}
	if class == snapshotPods {
		p.InTopology = watch.inTopology(b.Topology, b.Nodes)
	}
	return p, nil
}

func (b *bench) snapshotNames() []string {
	var names []string
	for name := range b.Topology {
		names = append(names, name)
	}
	// Sorted, so that every round spreads its pods over the snapshots
	// alike.
	slices.Sort(names)
	return names
}

// classLabel selects the pods of class by their snapshot label.
func classLabel(class podClass) string {
	if class == snapshotPods {
		return snapshotLabel
	}
	return "!" + snapshotLabel
}

// watch records when each pod of a phase first shows a node.
type watch struct {
	mu        sync.Mutex
	scheduled map[string]placed
	cancel    context.CancelFunc
}

type placed struct {
	at             time.Time
	node, snapshot string
}

func startWatch(ctx context.Context, kube kubernetes.Interface, namespace, selector string) (*watch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &watch{scheduled: map[string]placed{}, cancel: cancel}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	pods := factory.Core().V1().Pods().Informer()
	record := func(obj any) {
		if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
			w.record(pod)
		}
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) }}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		cancel()
		return nil, fmt.Errorf("pod watch did not sync")
	}
	return w, nil
}

func (w *watch) record(pod *v1.Pod) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, seen := w.scheduled[pod.Name]; !seen {
		w.scheduled[pod.Name] = placed{at: now, node: pod.Spec.NodeName, snapshot: pod.Labels[snapshotLabel]}
	}
}

func (w *watch) stop() { w.cancel() }

func (w *watch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.scheduled)
}

func (w *watch) waitScheduled(ctx context.Context, n int, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return w.count() >= n, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d pods scheduled after %s: %w", w.count(), n, timeout, err)
	}
	return nil
}

// elapsed is the time from the first pod scheduled to the last.
func (w *watch) elapsed() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first, last time.Time
	for _, p := range w.scheduled {
		if first.IsZero() || p.at.Before(first) {
			first = p.at
		}
		if p.at.After(last) {
			last = p.at
		}
	}
	return last.Sub(first)
}

// inTopology counts the pods on a node that satisfies their snapshot's
// nodeAffinity (an empty one admits every node).
func (w *watch) inTopology(topology map[string][]v1.TopologySelectorTerm, nodes map[string]labels.Set) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, p := range w.scheduled {
		terms := topology[p.snapshot]
		if len(terms) == 0 || corev1helper.MatchTopologySelectorTerms(terms, nodes[p.node]) {
			n++
		}
	}
	return n
}

// Load is the machine's load averages, from /proc/loadavg.
func Load() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
