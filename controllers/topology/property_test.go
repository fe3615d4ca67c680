package topology

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
)

// Property tests draw inputs with fixed seeds so failures reproduce; the
// fuzz targets explore beyond them.

const propertyRuns = 1000

func TestPropertyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 5943))
	for range propertyRuns {
		in := randSegments(r, 8)
		ts, err := FromCSI(in)
		if err != nil {
			t.Fatalf("FromCSI(%s): %v", fmtSegs(in), err)
		}
		back, err := Expand(ts)
		if err != nil {
			t.Fatalf("Expand(FromCSI(%s)): %v", fmtSegs(in), err)
		}
		// Identity on sets, and in fact on the de-duplicated list.
		if fmtSegs(back) != fmtSegs(dedupSegs(in)) {
			t.Fatalf("round trip %s -> %s -> %s", fmtSegs(in), fmtTerms(ts), fmtSegs(back))
		}
		if !sameSet(segSet(back), segSet(in)) {
			t.Fatalf("round trip changed the segment set: %s -> %s", fmtSegs(in), fmtSegs(back))
		}
		checkOneValuePerKey(t, ts)
	}
}

func checkOneValuePerKey(t *testing.T, ts []v1.TopologySelectorTerm) {
	t.Helper()
	for i, tm := range ts {
		for _, e := range tm.MatchLabelExpressions {
			if len(e.Values) != 1 {
				t.Fatalf("term %d key %s has %d values; FromCSI must not fold", i, e.Key, len(e.Values))
			}
		}
	}
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// TestPropertyConversionsAdmitTheSameNodes: a constraint converted from
// segments to terms (FromCSI) or back (Expand) admits exactly the nodes
// it admitted before. This is what "lossless" means to the scheduler.
func TestPropertyConversionsAdmitTheSameNodes(t *testing.T) {
	tests := []struct {
		name string
		seed uint64
		// draw returns one random constraint both ways, as terms and as
		// segments, one converted from the other.
		draw func(r *rand.Rand) ([]v1.TopologySelectorTerm, []*csi.Topology, error)
	}{{
		name: "FromCSI", seed: 2,
		draw: func(r *rand.Rand) ([]v1.TopologySelectorTerm, []*csi.Topology, error) {
			in := randSegments(r, 6)
			ts, err := FromCSI(in)
			return ts, in, err
		},
	}, {
		name: "Expand", seed: 3,
		draw: func(r *rand.Rand) ([]v1.TopologySelectorTerm, []*csi.Topology, error) {
			ts := randTerms(r, 4)
			out, err := Expand(ts)
			if err == nil && len(segSet(out)) != len(out) {
				err = fmt.Errorf("Expand(%s) has duplicates: %s", fmtTerms(ts), fmtSegs(out))
			}
			return ts, out, err
		},
	}}
	nodes := universe()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, 5943))
			for range propertyRuns {
				ts, segs, err := tc.draw(r)
				if err != nil {
					t.Fatal(err)
				}
				if len(ts) == 0 {
					continue // no constraint: covered by TestMatchSemantics
				}
				if n, got, ok := disagreement(nodes, matcher(ts), segmentsMatcher(segs)); ok {
					t.Fatalf("terms %s, segments %s, node %s: matches = %v, in a segment = %v", fmtTerms(ts), fmtSegs(segs), fmtLabels(n), got, !got)
				}
			}
		})
	}
}

// TestPropertyIntersection checks, over every node of the universe, that
// matches(a∩b) == matches(a) && matches(b) (so the intersection never
// admits a node either side rejects, and loses none both admit) and that
// a∩b and b∩a admit the same nodes.
func TestPropertyIntersection(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5943))
	for range propertyRuns {
		checkIntersection(t, randTerms(r, 3), randTerms(r, 3))
	}
}

// TestPropertyIntersectionFromSegments intersects snapshot-shaped terms
// (from CSI segments) with StorageClass-shaped ones, the provisioner's
// actual use.
func TestPropertyIntersectionFromSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5943))
	for range propertyRuns {
		snap, err := FromCSI(randSegments(r, 5))
		if err != nil {
			t.Fatal(err)
		}
		checkIntersection(t, randTerms(r, 2), snap)
	}
}

// TestPropertyIntersectionNeverAdmitsRejected restates the safety half of
// the law directly, node by node, so that a failure names the side.
func TestPropertyIntersectionNeverAdmitsRejected(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 5943))
	nodes := universe()
	for range propertyRuns {
		a, b := randTerms(r, 3), randTerms(r, 3)
		got, ok, err := Intersect(a, b)
		if err != nil {
			t.Fatal(err)
		}
		inAB, inA, inB := resultMatcher(got, ok), matcher(a), matcher(b)
		for _, n := range nodes {
			if !inAB(n) {
				continue
			}
			if !inA(n) {
				t.Fatalf("a∩b admits %s which a=%s rejects", fmtLabels(n), fmtTerms(a))
			}
			if !inB(n) {
				t.Fatalf("a∩b admits %s which b=%s rejects", fmtLabels(n), fmtTerms(b))
			}
		}
	}
}

// TestPropertyIntersectionAlgebra: idempotent, associative and with nil
// as identity, all as sets of admitted nodes.
func TestPropertyIntersectionAlgebra(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 5943))
	nodes := universe()
	type constraint struct {
		terms []v1.TopologySelectorTerm
		ok    bool
	}
	and := func(x, y constraint) constraint {
		if !x.ok || !y.ok {
			return constraint{nil, false}
		}
		ts, ok, err := Intersect(x.terms, y.terms)
		if err != nil {
			t.Fatal(err)
		}
		return constraint{ts, ok}
	}
	same := func(x, y constraint) bool {
		_, _, differ := disagreement(nodes, resultMatcher(x.terms, x.ok), resultMatcher(y.terms, y.ok))
		return !differ
	}
	for range propertyRuns {
		a := constraint{randTerms(r, 3), true}
		b := constraint{randTerms(r, 3), true}
		c := constraint{randTerms(r, 3), true}
		if !same(and(a, a), a) {
			t.Fatalf("a∩a differs from a=%s", fmtTerms(a.terms))
		}
		if !same(and(a, constraint{nil, true}), a) {
			t.Fatalf("a∩nil differs from a=%s", fmtTerms(a.terms))
		}
		if !same(and(and(a, b), c), and(a, and(b, c))) {
			t.Fatalf("not associative: a=%s b=%s c=%s", fmtTerms(a.terms), fmtTerms(b.terms), fmtTerms(c.terms))
		}
	}
}
