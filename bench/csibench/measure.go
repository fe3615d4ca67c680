package csibench

import (
	"context"
	"fmt"
	"math"
	"time"
)

const (
	nullName     = "null"
	zonepathName = "zonepath"
)

// target is a driver under measurement and the volumes it snapshots.
type target struct {
	p       *process
	sources []string
}

// key names one measurement of one driver.
type key struct {
	rpc           string
	objects, conc int
	driver        string
}

// results gathers the samples of every round under their key.
type results map[key]*sample

func (r results) add(k key, s sample) {
	if r[k] == nil {
		r[k] = &sample{}
	}
	r[k].add(s)
}

// A measurement runs one round of some RPCs against t at n objects and
// conc callers and adds what it timed to res.
type measurement func(ctx context.Context, t target, n, conc, round int, res results) error

// measurements: creates then deletes of what they made (so every round
// starts at n objects), then complete listings.
func (c Config) measurements() []measurement {
	perRound := max(c.CreateOps/c.Rounds, 1)
	listFor := c.ListTime / time.Duration(c.Rounds)
	return []measurement{
		c.writes("CreateVolume", "DeleteVolume", false, perRound),
		c.writes("CreateSnapshot", "DeleteSnapshot", true, perRound),
		listings("ListVolumes", false, listFor),
		listings("ListSnapshots", true, listFor),
	}
}

func (c Config) writes(create, del string, snapshots bool, ops int) measurement {
	return func(ctx context.Context, t target, n, conc, round int, res results) error {
		ids := make(idsByWorker, conc)
		var sources []string
		if snapshots {
			sources = t.sources
		}
		prefix := fmt.Sprintf("bench-n%d-c%d-r%d-%s", n, conc, round, create)
		s, err := timed(ctx, t.p, conc, count(conc, ops), creates(t.p.ctrl, prefix, sources, ids))
		if err != nil {
			return fmt.Errorf("%s: %w", create, err)
		}
		res.add(key{create, n, conc, t.p.name}, s)
		// Each worker deletes what it created.
		s, err = timed(ctx, t.p, conc, func(w, i int) bool { return i < len(ids[w]) }, deletes(t.p.ctrl, snapshots, ids))
		if err != nil {
			return fmt.Errorf("%s: %w", del, err)
		}
		res.add(key{del, n, conc, t.p.name}, s)
		return nil
	}
}

func listings(rpc string, snapshots bool, d time.Duration) measurement {
	return func(ctx context.Context, t target, n, conc, round int, res results) error {
		s, err := timed(ctx, t.p, conc, until(d), lists(t.p.ctrl, snapshots, n))
		if err != nil {
			return fmt.Errorf("%s: %w", rpc, err)
		}
		res.add(key{rpc, n, conc, t.p.name}, s)
		return nil
	}
}

// populate makes n volumes and n snapshots spread over the
// first sourceVolumes of them, and returns those.
func populate(ctx context.Context, p *process, n int) ([]string, error) {
	vols := make(idsByWorker, populateConcurrency)
	if _, err := timed(ctx, p, populateConcurrency, count(populateConcurrency, n), creates(p.ctrl, "pre", nil, vols)); err != nil {
		return nil, fmt.Errorf("populating volumes: %w", err)
	}
	sources := vols.all()[:min(n, sourceVolumes)]
	snaps := make(idsByWorker, populateConcurrency)
	if _, err := timed(ctx, p, populateConcurrency, count(populateConcurrency, n), creates(p.ctrl, "pre", sources, snaps)); err != nil {
		return nil, fmt.Errorf("populating snapshots: %w", err)
	}
	return sources, nil
}

// nullSources are volume IDs of the null driver's shape; it snapshots
// anything.
func nullSources() []string { return []string{"zpv-000000000000000000000000"} }

// sameShapes checks that both drivers list n volumes and n snapshots
// whose encodings are of about the same size, so that the null driver is
// a baseline for the same bytes.
func sameShapes(ctx context.Context, null, zp *process, n int) error {
	for _, snapshots := range []bool{false, true} {
		a, err := listAll(ctx, null.ctrl, snapshots, true)
		if err != nil {
			return fmt.Errorf("null driver: %w", err)
		}
		b, err := listAll(ctx, zp.ctrl, snapshots, true)
		if err != nil {
			return fmt.Errorf("zonepath: %w", err)
		}
		what := map[bool]string{false: "volumes", true: "snapshots"}[snapshots]
		if a.entries != n || b.entries != n || a.pages != b.pages {
			return fmt.Errorf("listing %s: null driver %d entries in %d pages, zonepath %d in %d; want %d each", what, a.entries, a.pages, b.entries, b.pages, n)
		}
		ratio := float64(b.bytes) / float64(a.bytes)
		progress("listing %d %s: %.1f bytes/entry from zonepath, %.1f from the null driver", n, what, float64(b.bytes)/float64(n), float64(a.bytes)/float64(n))
		if math.Abs(ratio-1) > 0.1 {
			return fmt.Errorf("listing %s: zonepath sends %d bytes, the null driver %d: not the same shapes", what, b.bytes, a.bytes)
		}
	}
	return nil
}
