package topology

import (
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestMatchSemantics pins the reading of terms this package relies on
// (controllers/README.md, "No constraint versus no node") to Kubernetes'
// matcher, so an upstream change shows here rather than as a misplaced
// pod.
func TestMatchSemantics(t *testing.T) {
	r1a := term(expr(rk, "r1"), expr(zk, "a"))
	tests := []struct {
		name   string
		terms  []v1.TopologySelectorTerm
		labels map[string]string
		want   bool
	}{
		{"nil terms match everything", nil, node(zk, "q"), true},
		{"empty terms match everything", terms(), nil, true},
		{"all keys match", terms(r1a), node(rk, "r1", zk, "a"), true},
		{"extra node labels ignored", terms(r1a), node(rk, "r1", zk, "a", "kubernetes.io/hostname", "n1"), true},
		{"one key differs", terms(r1a), node(rk, "r1", zk, "b"), false},
		{"key missing", terms(r1a), node(zk, "a"), false},
		{"no labels", terms(r1a), nil, false},
		{"value in set", terms(term(expr(zk, "a", "b"))), node(zk, "b"), true},
		{"empty label value is not a missing key", terms(term(expr(zk, ""))), node(zk, ""), true},
		{"empty label value does not match missing key", terms(term(expr(zk, ""))), node(), false},
		{"OR across terms", terms(r1a, term(expr(zk, "b"))), node(rk, "r9", zk, "b"), true},
		{"empty term matches nothing", terms(term()), node(zk, "a"), false},
		{"empty term does not block others", terms(term(), term(expr(zk, "a"))), node(zk, "a"), true},
		{"expression without values matches nothing", terms(term(expr(zk))), node(zk, "a"), false},
		{"duplicate keys are ANDed", terms(term(expr(zk, "a", "b"), expr(zk, "b", "c"))), node(zk, "b"), true},
		{"duplicate keys are ANDed, no common value", terms(term(expr(zk, "a"), expr(zk, "b"))), node(zk, "a"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := matches(tc.terms, tc.labels); got != tc.want {
				t.Fatalf("MatchTopologySelectorTerms(%s, %s) = %v, want %v", fmtTerms(tc.terms), fmtLabels(tc.labels), got, tc.want)
			}
		})
	}
}

// TestMatcherAgreesWithKubernetes holds the tests' built-once matcher to
// MatchTopologySelectorTerms on random lists, including empty terms and
// expressions without values, over every node of the universe.
func TestMatcherAgreesWithKubernetes(t *testing.T) {
	r := rand.New(rand.NewPCG(5943, 1))
	nodes := universe()
	for range 200 {
		ts := randTerms(r, 4)
		if len(ts) > 0 && r.IntN(4) == 0 {
			ts[r.IntN(len(ts))] = term() // empty term
		}
		if len(ts) > 0 && r.IntN(4) == 0 {
			ts = append(ts, term(expr(zk))) // expression without values
		}
		library := func(n map[string]string) bool { return matches(ts, n) }
		if n, got, ok := disagreement(nodes, matcher(ts), library); ok {
			t.Fatalf("terms %s, node %s: matcher = %v, MatchTopologySelectorTerms = %v", fmtTerms(ts), fmtLabels(n), got, !got)
		}
	}
}
