package chaos

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// scenario is one kind of cycle.
type scenario struct {
	name string
	run  func(ctx context.Context, c *cycle) error
}

// exhaustClass is the VolumeSnapshotClass that puts every copy in the
// exhausted zone.
const exhaustClass = prefix + "exhaust"

// plainScenarios are snapshot → restore cycles of zonal and region-wide
// snapshots, restored WaitForFirstConsumer (zonepath-scheduler picks the
// node) and Immediate (zonepath-provisioner narrows the class), each
// from a source in the next zone.
func plainScenarios(l layout) []scenario {
	var out []scenario
	for _, s := range []struct {
		name, snapshotClass string
		wffc                bool
	}{
		{"zonal-wffc", snapshotClassZonal, true},
		{"region-immediate", snapshotClassWide, false},
		{"zonal-immediate", snapshotClassZonal, false},
		{"region-wffc", snapshotClassWide, true},
	} {
		out = append(out, scenario{name: s.name, run: func(ctx context.Context, c *cycle) error {
			return c.plain(ctx, l.sources[c.n%int64(len(l.sources))], s.snapshotClass, s.wffc)
		}})
	}
	return out
}

// plain is a source in zone w, a snapshot of it in snapshotClass, and a
// restore of that.
func (c *cycle) plain(ctx context.Context, w where, snapshotClass string, wffc bool) error {
	if _, err := c.source(ctx, w); err != nil {
		return err
	}
	content, err := c.snapshot(ctx, c.name("snap"), c.name("src"), snapshotClass, nil)
	if err != nil {
		return err
	}
	class := classImmediate
	if wffc {
		class = classWFFC
	}
	return c.restore(ctx, c.name("snap"), content, class, wffc)
}

// exhaustedScenario fills the exhausted zone's snapshot quota (as many
// snapshots as the cluster file allows there), sees the next snapshot
// refused with RESOURCE_EXHAUSTED and kept "being created", frees room by
// deleting the first, and restores from the last once the retry made it.
func exhaustedScenario(l layout) scenario {
	return scenario{name: "exhausted", run: func(ctx context.Context, c *cycle) error {
		if _, err := c.source(ctx, *l.exhausted); err != nil {
			return err
		}
		var fillContent *unstructured.Unstructured
		for i := range l.quota {
			content, err := c.snapshot(ctx, c.name(fmt.Sprintf("fill%d", i)), c.name("src"), exhaustClass, nil)
			if err != nil {
				return err
			}
			if i == 0 {
				fillContent = content
			}
		}
		start := time.Now()
		if err := c.createSnapshot(ctx, c.name("snap"), c.name("src"), exhaustClass); err != nil {
			return err
		}
		if err := c.seeExhausted(ctx, c.name("snap")); err != nil {
			return err
		}
		c.w.ledger.Done(c.rec.Name, "snapshot refused: quota exhausted", start)
		fill := ref{kindSnapshot, c.name("fill0")}
		c.w.reaper.delete(ctx, c.rec, []ref{fill})
		c.refs = without(c.refs, fill)
		c.bound = slices.DeleteFunc(c.bound, func(o Object) bool { return o.Name == fillContent.GetName() })
		content, err := c.ready(ctx, c.name("snap"), "snapshot ready after the quota was freed", start, nil)
		if err != nil {
			return fmt.Errorf("after the quota was freed: %w", err)
		}
		return c.restore(ctx, c.name("snap"), content, classImmediate, false)
	}}
}

// seeExhausted waits for the snapshot's RESOURCE_EXHAUSTED; it must not
// become ready while the quota is full.
func (c *cycle) seeExhausted(ctx context.Context, name string) error {
	return poll(ctx, func(ctx context.Context) (bool, error) {
		vs, err := c.w.api.resource(kindSnapshot).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		if ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse"); ready {
			return false, fmt.Errorf("snapshot %s became ready in a zone whose quota was full", name)
		}
		if msg := snapshotError(vs); hasWord([]string{msg}, "ResourceExhausted") {
			c.note("the driver refused the snapshot: %s", msg)
			return true, nil
		}
		return false, nil
	})
}

func without(refs []ref, r ref) []ref {
	var out []ref
	for _, x := range refs {
		if x != r {
			out = append(out, x)
		}
	}
	return out
}
