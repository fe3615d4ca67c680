package chaos

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zonepath/zonepath/fakezones/spec"
)

// layout is where the scenarios put things, from the cluster file.
type layout struct {
	// sources are the zones plain cycles start in, round robin: every
	// zone but the exhausted one, whose quota they would use up.
	sources []where
	// pair are two zones of one region, for the edits: a snapshot or a
	// restore allowed in both lands in one, the edit allows the other.
	pair [2]where
	// exhausted is a zone with a snapshot quota (nil: none, the
	// exhausted scenario does not run), quota how many snapshots fill it.
	// Its cycles' source volumes are in it too: a driver may cut a
	// snapshot only in its source's zone, and CSI allows that.
	exhausted *where
	quota     int64
}

// planLayout finds the layout in a cluster; it needs two zones in one
// region.
func planLayout(cl *spec.Cluster) (layout, error) {
	var l layout
	byRegion := map[string][]where{}
	var all []where
	for z := 0; z < cl.Zones; z++ {
		w := where{region: cl.RegionOf(z), zone: spec.ZoneName(z)}
		all = append(all, w)
		byRegion[w.region] = append(byRegion[w.region], w)
		if q := cl.SnapshotQuotas[w.zone]; l.exhausted == nil && q > 0 {
			l.exhausted, l.quota = &w, q
		}
	}
	found := false
	for r := 0; r < cl.Regions && !found; r++ {
		if zones := byRegion[spec.RegionName(r)]; len(zones) >= 2 {
			l.pair, found = [2]where{zones[0], zones[1]}, true
		}
	}
	if !found {
		return l, fmt.Errorf("the cluster needs two zones in one region for the edit scenarios")
	}
	for _, w := range all {
		if l.exhausted != nil && w == *l.exhausted {
			continue
		}
		l.sources = append(l.sources, w)
	}
	return l, nil
}

// sourceZones are the zones a source volume is made in, each once.
func (l layout) sourceZones() []where {
	var out []where
	for _, w := range append(l.sources, l.pair[:]...) {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	if l.exhausted != nil && !slices.Contains(out, *l.exhausted) {
		out = append(out, *l.exhausted)
	}
	return out
}

// other is the zone of the pair that is not w.
func (l layout) other(zone string) where {
	if l.pair[0].zone == zone {
		return l.pair[1]
	}
	return l.pair[0]
}

// workload runs cycles on lanes until its context ends.
type workload struct {
	api    *api
	driver *driver
	ledger *Ledger
	reaper *reaper
	faults *faultFile
	// controllerStarted says whether the zonepath controller was started
	// after a time: it then read the fault rules at start.
	controllerStarted func(time.Time) bool
	layout            layout
	// nodes are the labels of the cluster's nodes.
	nodes []map[string]string
	seq   atomic.Int64
	// drain bounds the deletions of cycles cut short by the run's end.
	drain context.Context
}

// setUp makes the namespace and the classes every cycle shares; the
// reaper deletes the classes at the end.
func (w *workload) setUp(ctx context.Context) error {
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := create(ctx, "namespace "+Namespace, func(ctx context.Context) error {
		_, err := w.api.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	for _, z := range w.layout.sourceZones() {
		sc := sourceClass(z)
		if err := create(ctx, "StorageClass "+sc.Name, func(ctx context.Context) error {
			_, err := w.api.kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
			return err
		}); err != nil {
			return err
		}
	}
	if w.layout.exhausted == nil {
		return nil
	}
	class := snapshotClass(exhaustClass, *w.layout.exhausted)
	return create(ctx, "VolumeSnapshotClass "+exhaustClass, func(ctx context.Context) error {
		_, err := w.api.resource(kindSnapshotClass).Create(ctx, class, metav1.CreateOptions{})
		return err
	})
}

// tearDown deletes the shared classes.
func (w *workload) tearDown(ctx context.Context) {
	c := w.ledger.StartCycle("shared", "shared classes")
	var refs []ref
	for _, z := range w.layout.sourceZones() {
		refs = append(refs, ref{kindStorageClass, sourceClassName(z)})
	}
	if w.layout.exhausted != nil {
		refs = append(refs, ref{kindSnapshotClass, exhaustClass})
	}
	w.ledger.Outcome(c, OutcomeOK)
	w.reaper.delete(ctx, c, dedupe(refs))
}

func dedupe(refs []ref) []ref {
	seen := map[ref]bool{}
	var out []ref
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// lane runs the scenarios in turn, from the first'th, until ctx ends.
func (w *workload) lane(ctx context.Context, scenarios []scenario, first int) {
	for i := first; ctx.Err() == nil; i++ {
		w.runCycle(ctx, scenarios[i%len(scenarios)])
	}
}

// runCycle runs one cycle of s and hands what it made to the reaper,
// also when it failed or the run ended under it.
func (w *workload) runCycle(ctx context.Context, s scenario) {
	n := w.seq.Add(1)
	c := &cycle{w: w, n: n, rec: w.ledger.StartCycle(fmt.Sprintf("c%03d", n), s.name)}
	err := s.run(ctx, c)
	switch {
	case err == nil:
		if err = c.verify(ctx); err == nil {
			w.ledger.Outcome(c.rec, OutcomeOK)
		}
	case ctx.Err() != nil:
		w.ledger.Outcome(c.rec, OutcomeCutShort)
	default:
		w.ledger.Outcome(c.rec, err.Error())
	}
	refs := make([]ref, len(c.refs))
	for i, r := range c.refs {
		refs[len(refs)-1-i] = r
	}
	w.reaper.delete(w.drain, c.rec, refs)
}

// run starts the lanes and returns when all have stopped after ctx ended.
func (w *workload) run(ctx context.Context, lanes int) {
	var wg sync.WaitGroup
	plain := plainScenarios(w.layout)
	for i := range lanes {
		wg.Go(func() { w.lane(ctx, plain, i) })
	}
	wg.Go(func() { w.lane(ctx, faultScenarios(w.layout), 0) })
	if w.layout.exhausted != nil {
		wg.Go(func() { w.lane(ctx, []scenario{exhaustedScenario(w.layout)}, 0) })
	}
	wg.Wait()
}
