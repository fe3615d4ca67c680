package topology

import (
	"math/rand/v2"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestMatches(t *testing.T) {
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
			if got := Matches(tc.terms, tc.labels); got != tc.want {
				t.Fatalf("Matches(%s, %s) = %v, want %v", fmtTerms(tc.terms), fmtLabels(tc.labels), got, tc.want)
			}
			if got := k8sMatches(tc.terms, tc.labels); got != tc.want {
				t.Fatalf("oracle disagrees with the table: k8sMatches = %v", got)
			}
		})
	}
}

// TestMatchesAgreesWithKubernetes compares Matches with Kubernetes' own
// algorithm on random terms, including empty terms and empty value lists,
// over every node of the universe.
func TestMatchesAgreesWithKubernetes(t *testing.T) {
	r := rand.New(rand.NewPCG(5943, 1))
	nodes := universe()
	for range 500 {
		ts := randTerms(r, 4)
		if len(ts) > 0 && r.IntN(4) == 0 {
			ts[r.IntN(len(ts))] = term() // empty term
		}
		if len(ts) > 0 && r.IntN(4) == 0 {
			ts = append(ts, term(expr(zk))) // expression without values
		}
		oracle := k8sMatcher(ts)
		for _, n := range nodes {
			if got, want := Matches(ts, n), oracle(n); got != want {
				t.Fatalf("Matches(%s, %s) = %v, Kubernetes says %v", fmtTerms(ts), fmtLabels(n), got, want)
			}
		}
	}
}
