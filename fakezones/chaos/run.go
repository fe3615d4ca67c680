package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/zonepath/zonepath/fakezones/cluster"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// Options configure a chaos run.
type Options struct {
	// OutputDir gets the cluster's work directory (cluster/), the fault
	// rules file and the report; wiped first.
	OutputDir string
	// BinDir and CRDDir are as for cluster.Options.
	BinDir, CRDDir string
	// RBACDir is cluster.Options.RBACDir: with it the components run as
	// deploy/'s ServiceAccounts, so a retry needing a verb the roles lack
	// fails the run as it would fail a cluster.
	RBACDir      string
	Cluster      *spec.Cluster
	FeatureGates string
	// Duration bounds the whole run, the cluster's start and stop
	// included.
	Duration time.Duration
	// Settle bounds the wait for the workload's deletions at the end;
	// 0 is an eighth of Duration, from 60 s to 90 s.
	Settle time.Duration
	// KillEvery is the time from one kill to the next (longer when a
	// component takes longer to come back).
	KillEvery time.Duration
	// Lanes is how many plain snapshot → restore cycles run at once,
	// besides one lane of lost replies and edits and one of an exhausted
	// zone.
	Lanes int
	// Seed orders the kills (Schedule).
	Seed uint64
	// MaxBackoff is cluster.Options.MaxBackoff.
	MaxBackoff time.Duration
	Out        io.Writer
}

// reserve is the time a run keeps, besides the settle time, for the
// audit, the report and the cluster's stop; minChaos is the least time
// of chaos worth a cluster's start.
const (
	reserve  = 45 * time.Second
	minChaos = 40 * time.Second
)

// minSettle is the least settle time: a kube-apiserver killed just before
// the chaos ends comes back answering 403 until its RBAC cache is filled,
// the controllers' watches back off (client-go's reflectors up to 30 s),
// and only then does kube-controller-manager set a claim's provisioner or
// drop a volume's pv-protection finalizer. On a busy machine (CI runs
// chaos beside the conformance matrix) 30 s left such deletions pending,
// which the audit then reports as stuck. The bound costs nothing when the
// deletions finish sooner.
const minSettle = 60 * time.Second

func (o *Options) settle() time.Duration {
	if o.Settle > 0 {
		return o.Settle
	}
	return min(max(o.Duration/8, minSettle), 90*time.Second)
}

// Run starts a cluster, runs the workload while killing components,
// lets the workload delete everything, audits both ends, prints the
// report and stops the cluster, also on failure or cancellation. It
// returns the findings; an error is a run that could not finish.
func Run(ctx context.Context, o Options) ([]Finding, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	deadline := t0.Add(o.Duration)
	out := &lockedWriter{w: o.Out}
	o.Out = out
	l, err := planLayout(o.Cluster)
	if err != nil {
		return nil, err
	}
	faults, err := o.prepare()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "chaos: starting a fake-zones cluster in %s\n", filepath.Join(o.OutputDir, "cluster"))
	state, err := cluster.Up(ctx, cluster.Options{WorkDir: filepath.Join(o.OutputDir, "cluster"), BinDir: o.BinDir, CRDDir: o.CRDDir,
		RBACDir: o.RBACDir, Cluster: o.Cluster, FeatureGates: o.FeatureGates, DriverFaultRules: faults.path, MaxBackoff: o.MaxBackoff,
		Timeout: 5 * time.Minute, Out: out})
	if err != nil {
		return nil, fmt.Errorf("cluster up: %w", err)
	}
	defer down(state, out)
	r, err := newRun(ctx, o, state, l, faults)
	if err != nil {
		return nil, err
	}
	defer r.driver.close()
	phaseEnd := deadline.Add(-o.settle() - reserve)
	if time.Until(phaseEnd) < minChaos/2 {
		return nil, fmt.Errorf("--duration %s leaves %s for chaos after the cluster's start (%s), the settle time and %s for the audit and stop",
			o.Duration, time.Until(phaseEnd).Round(time.Second), time.Since(t0).Round(time.Second), reserve)
	}
	if phase := time.Until(phaseEnd); phase < stepTimeout {
		fmt.Fprintf(out, "chaos: %s of chaos is less than a step's bound (%s): a cycle that stalls will be cut short, not failed; a longer --duration sees stalls\n",
			phase.Round(time.Second), stepTimeout)
	}
	killErr := r.chaos(ctx, phaseEnd)
	stopSupervising := r.killer.supervise(ctx)
	defer stopSupervising()
	settle := o.settle()
	if ctx.Err() != nil {
		fmt.Fprintln(out, "chaos: interrupted; auditing what is there now, without waiting for the deletions")
		settle = 0
	}
	findings, auditErr := r.finish(ctx, settle)
	stopSupervising()
	r.report(findings, t0)
	return findings, errors.Join(killErr, auditErr)
}

func (o *Options) validate() error {
	switch {
	case o.OutputDir == "":
		return errors.New("no output directory")
	case o.Duration <= 0 || o.KillEvery <= 0 || o.Settle < 0 || o.MaxBackoff < 0:
		return fmt.Errorf("the duration (%s), the kill interval (%s), the settle time (%s) and the backoff (%s) must be positive",
			o.Duration, o.KillEvery, o.Settle, o.MaxBackoff)
	case o.Lanes < 0:
		return fmt.Errorf("lanes: %d is negative", o.Lanes)
	case o.Duration-o.settle()-reserve < minChaos:
		return fmt.Errorf("--duration %s leaves less than %s of chaos besides the settle time (%s) and %s for the cluster's start, the audit and the stop",
			o.Duration, minChaos, o.settle(), reserve)
	}
	return nil
}

// prepare empties the output directory and writes an empty fault rules
// file, which up requires to exist.
func (o *Options) prepare() (*faultFile, error) {
	if err := os.RemoveAll(o.OutputDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutputDir, 0o755); err != nil {
		return nil, err
	}
	f := &faultFile{path: filepath.Join(o.OutputDir, "faults.yaml")}
	return f, f.clear()
}

func down(s *cluster.State, out io.Writer) {
	t0 := time.Now()
	if err := cluster.Down(context.Background(), s.WorkDir, io.Discard); err != nil {
		fmt.Fprintf(out, "chaos: stopping the cluster failed: %v\n", err)
		return
	}
	fmt.Fprintf(out, "chaos: cluster stopped in %s\n", time.Since(t0).Round(100*time.Millisecond))
}

// run is one chaos run on a started cluster.
type run struct {
	o        Options
	state    *cluster.State
	api      *api
	driver   *driver
	ledger   *Ledger
	reaper   *reaper
	killer   *killer
	workload *workload
	// stopReaper ends the reaper once the audit starts.
	stopReaper func()
}

func newRun(ctx context.Context, o Options, state *cluster.State, l layout, faults *faultFile) (*run, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", state.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	a := &api{kube: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
	d, err := dialDriver(state.Controller)
	if err != nil {
		return nil, err
	}
	controller, err := state.Process("zonepath-controller")
	if err != nil {
		return nil, err
	}
	faults.log = controller.Log
	ledger := NewLedger()
	r := &run{o: o, state: state, api: a, driver: d, ledger: ledger, reaper: newReaper(a, ledger)}
	r.killer = &killer{state: state, schedule: NewSchedule(Victims, o.Seed), every: o.KillEvery, ledger: ledger,
		driver: d, log: o.Out, started: map[string]time.Time{}}
	r.workload = &workload{api: a, driver: d, ledger: ledger, reaper: r.reaper, faults: faults, layout: l,
		controllerStarted: func(t time.Time) bool { return r.killer.startedSince("zonepath-controller", t) }}
	nodes, err := a.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range nodes.Items {
		r.workload.nodes = append(r.workload.nodes, n.Labels)
	}
	return r, r.workload.setUp(ctx)
}

// chaos runs the workload and the killer until phaseEnd (or ctx ends),
// then stops both; its error is the killer's.
func (r *run) chaos(ctx context.Context, phaseEnd time.Time) error {
	fmt.Fprintf(r.o.Out, "chaos: workload of %d plain lanes, one of lost replies and edits, one of an exhausted zone; a kill every %s (seed %d) until %s\n",
		r.o.Lanes, r.o.KillEvery, r.o.Seed, phaseEnd.Format(time.TimeOnly))
	phase, stop := context.WithDeadline(ctx, phaseEnd)
	defer stop()
	// Deletions of cycles cut short must outlive the phase, not a Ctrl-C.
	r.workload.drain = ctx
	reap, stopReaper := context.WithCancel(context.WithoutCancel(ctx))
	r.stopReaper = stopReaper
	go r.reaper.run(reap)
	progressDone := r.progress(context.WithoutCancel(ctx), "chaos")
	defer progressDone()
	var wg sync.WaitGroup
	var killErr error
	wg.Go(func() {
		if killErr = r.killer.run(phase); killErr != nil {
			fmt.Fprintf(r.o.Out, "chaos: the killer stopped: %v\n", killErr)
			stop()
		}
	})
	wg.Go(func() { r.workload.run(phase, r.o.Lanes) })
	wg.Wait()
	return killErr
}

// finish deletes the shared classes, waits up to settle for the
// deletions, and audits both ends.
func (r *run) finish(ctx context.Context, settle time.Duration) ([]Finding, error) {
	ctx = context.WithoutCancel(ctx)
	progressDone := r.progress(ctx, "settle")
	t0 := time.Now()
	// The shared classes go last: a content being deleted may need its
	// class for one more CreateSnapshot retry.
	r.settled(t0, settle, nil)
	r.workload.tearDown(ctx)
	r.settled(t0, settle+min(settle, 10*time.Second), func() bool { return r.leftovers(ctx) })
	progressDone()
	r.stopReaper()
	fmt.Fprintf(r.o.Out, "chaos: settled in %s, %d deletions still pending; auditing both ends\n", time.Since(t0).Round(time.Second), r.reaper.waiting())
	findings := r.ledger.Snapshot().Findings
	findings = append(findings, Failed(r.ledger.Snapshot().Cycles)...)
	backend, err := r.driver.list(ctx)
	if err != nil {
		return findings, fmt.Errorf("the audit cannot list the driver's volumes and snapshots: %w", err)
	}
	objs, err := r.api.inventory(ctx)
	if err != nil {
		return findings, fmt.Errorf("the audit cannot list the API objects: %w", err)
	}
	ledger := r.ledger.Snapshot()
	origins := ledger.Origins
	findings = append(findings, ProvisionerLeaks(Orphans(backend, objs, origins), backend, ledger)...)
	findings = append(findings, Missing(backend, objs, origins)...)
	return append(findings, Stuck(objs, origins)...), nil
}

// settled waits until the reaper has nothing pending and, when left is
// given, left says nothing is left, or until bound has passed since t0.
func (r *run) settled(t0 time.Time, bound time.Duration, left func() bool) {
	for time.Since(t0) < bound && (r.reaper.waiting() > 0 || (left != nil && left())) {
		time.Sleep(500 * time.Millisecond)
	}
}

// leftovers reports whether the API still holds an object the audit would
// call stuck. A deletion the reaper no longer waits for can still have left
// a content being created, which its sidecar finishes at its next retry
// (at most MaxBackoff later); the audit's verdict waits for the settle
// bound, not for the reaper's list alone.
func (r *run) leftovers(ctx context.Context) bool {
	objs, err := r.api.inventory(ctx)
	return err != nil || len(Stuck(objs, r.ledger.Snapshot().Origins)) > 0
}

// lockedWriter serialises the run's output lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// ErrFindings is Run's verdict when the audit found anything (Verdict).
var ErrFindings = errors.New("the audit found orphans, stuck objects or broken rules")

// DefaultCluster is the cluster of a chaos run without --config: two
// regions of two zones (zone-a and zone-c in region-1, zone-b and zone-d
// in region-2), two nodes each, and zone-d holding a single snapshot
// copy, so that the exhausted scenario can fill it.
func DefaultCluster() spec.File {
	return spec.File{Regions: 2, Zones: 4, NodesPerZone: 2, SnapshotQuotas: map[string]int64{"zone-d": 1}}
}
