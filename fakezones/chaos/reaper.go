package chaos

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ref names an object a cycle made.
type ref struct{ kind, name string }

// reaper deletes what cycles made and watches it go: a deletion is an
// operation that reaches its end state when the object and what it
// stood for (a claim's PersistentVolume, a snapshot's content) are gone.
// When the last object of a cycle is gone, the cycle ends.
type reaper struct {
	api    *api
	ledger *Ledger

	mu      sync.Mutex
	pending []*deletion
	left    map[*Cycle]int
	// last are a cycle's classes, deleted once the rest of it is gone:
	// the snapshotter needs a snapshot's class until its content is gone
	// (a retry of CreateSnapshot reads it), and a content whose class went
	// first keeps its being-created annotation for good.
	last map[*Cycle][]ref
}

type deletion struct {
	cycle *Cycle
	refs  []ref // the object, then its dependents
	start time.Time
}

func newReaper(a *api, l *Ledger) *reaper {
	return &reaper{api: a, ledger: l, left: map[*Cycle]int{}, last: map[*Cycle][]ref{}}
}

// delete deletes refs in order (a pod before its claim, a claim before
// its snapshot), each retried until the API server takes it, and hands
// them to run to watch; classes among them wait until the rest of the
// cycle is gone.
func (r *reaper) delete(ctx context.Context, c *Cycle, refs []ref) {
	var now []ref
	for _, o := range refs {
		if o.kind == kindSnapshotClass || o.kind == kindStorageClass {
			r.mu.Lock()
			r.last[c] = append(r.last[c], o)
			r.mu.Unlock()
			continue
		}
		now = append(now, o)
	}
	if len(now) == 0 {
		r.finished(ctx, c)
		return
	}
	r.issue(ctx, c, now)
}

func (r *reaper) issue(ctx context.Context, c *Cycle, refs []ref) {
	for _, o := range refs {
		d := &deletion{cycle: c, refs: append([]ref{o}, r.dependents(ctx, o)...), start: time.Now()}
		err := poll(ctx, func(ctx context.Context) (bool, error) {
			err := r.api.remove(ctx, o)
			return err == nil || apierrors.IsNotFound(err), nil
		})
		if err != nil {
			r.ledger.Finding(Finding{Rule: RuleStuck, What: o.kind + " " + o.name, Why: "the API server never took its deletion: " + err.Error(), Cycle: c.Name})
		}
		r.mu.Lock()
		r.pending = append(r.pending, d)
		r.left[c]++
		r.mu.Unlock()
	}
}

// dependents are what o stands for: the PV of a bound claim, the content
// of a snapshot.
func (r *reaper) dependents(ctx context.Context, o ref) []ref {
	switch o.kind {
	case kindClaim:
		pvc, err := r.api.kube.CoreV1().PersistentVolumeClaims(Namespace).Get(ctx, o.name, metav1.GetOptions{})
		if err == nil && pvc.Spec.VolumeName != "" {
			return []ref{{kindPV, pvc.Spec.VolumeName}}
		}
	case kindSnapshot:
		if c := r.api.contentOf(ctx, o.name); c != nil {
			return []ref{{kindContent, c.GetName()}}
		}
	}
	return nil
}

// run checks the pending deletions every 2 s until ctx is done.
func (r *reaper) run(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		r.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *reaper) sweep(ctx context.Context) {
	r.mu.Lock()
	pending := r.pending
	r.mu.Unlock()
	var left []*deletion
	for _, d := range pending {
		if !r.gone(ctx, d.refs) {
			left = append(left, d)
			continue
		}
		r.ledger.Done(d.cycle.Name, "deleted "+d.refs[0].kind, d.start)
		r.mu.Lock()
		r.left[d.cycle]--
		done := r.left[d.cycle] == 0
		r.mu.Unlock()
		if done {
			r.finished(ctx, d.cycle)
		}
	}
	r.mu.Lock()
	// Deletions handed over meanwhile are after pending's end.
	r.pending = append(left, r.pending[len(pending):]...)
	r.mu.Unlock()
}

// finished deletes the cycle's classes once the rest of it is gone, and
// ends the cycle once they are gone too.
func (r *reaper) finished(ctx context.Context, c *Cycle) {
	r.mu.Lock()
	last := r.last[c]
	delete(r.last, c)
	r.mu.Unlock()
	if len(last) == 0 {
		r.ledger.EndCycle(c)
		return
	}
	r.issue(ctx, c, last)
}

func (r *reaper) gone(ctx context.Context, refs []ref) bool {
	for _, o := range refs {
		if _, err := r.api.get(ctx, o); !apierrors.IsNotFound(err) {
			return false
		}
	}
	return true
}

// waiting is how many deletions are not done yet, classes held back
// included.
func (r *reaper) waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.pending)
	for _, l := range r.last {
		n += len(l)
	}
	return n
}

// remove deletes o; pods go at once (kwok runs no containers to stop).
func (a *api) remove(ctx context.Context, o ref) error {
	opts := metav1.DeleteOptions{}
	if o.kind == kindPod {
		opts.GracePeriodSeconds = ptr.To[int64](0)
	}
	return a.resource(o.kind).Delete(ctx, o.name, opts)
}

// get reads o; only its error matters to the reaper.
func (a *api) get(ctx context.Context, o ref) (metav1.Object, error) {
	return a.resource(o.kind).Get(ctx, o.name, metav1.GetOptions{})
}
