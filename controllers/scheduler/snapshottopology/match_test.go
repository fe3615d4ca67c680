package snapshottopology

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

// mustTerms converts unstructured terms (as term() builds them).
func mustTerms(terms ...any) []v1.TopologySelectorTerm {
	out := make([]v1.TopologySelectorTerm, len(terms))
	for i, t := range terms {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(t.(map[string]any), &out[i]); err != nil {
			panic(err)
		}
	}
	return out
}

// TestMatcherAgreesWithKubernetes holds the compiled matcher to
// MatchTopologySelectorTerms on random term lists, small (linear) and
// large (indexed), including malformed ones: empty terms, empty value
// lists, a key twice in a term, terms without a common key. The library
// validates every expression on every call, slow under -race, so the
// rounds are fewer than the matcher alone would allow.
func TestMatcherAgreesWithKubernetes(t *testing.T) {
	keys := []string{"r", "z", "rack"}
	values := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(n int) []string {
		out := make([]string, rng.IntN(n+1))
		for i := range out {
			out[i] = values[rng.IntN(len(values))]
		}
		return out
	}
	for round := range 500 {
		terms := make([]v1.TopologySelectorTerm, rng.IntN(2*indexFrom+2))
		for i := range terms {
			for range rng.IntN(4) {
				terms[i].MatchLabelExpressions = append(terms[i].MatchLabelExpressions,
					v1.TopologySelectorLabelRequirement{Key: keys[rng.IntN(len(keys))], Values: pick(setFrom + 3)})
			}
		}
		m := compile(terms)
		for range 10 {
			labels := map[string]string{}
			for _, k := range keys {
				if rng.IntN(5) > 0 {
					labels[k] = values[rng.IntN(len(values))]
				}
			}
			if got, want := m.matches(labels), v1helper.MatchTopologySelectorTerms(terms, labels); got != want {
				t.Fatalf("round %d: matcher(%v) = %v, MatchTopologySelectorTerms = %v; terms %v", round, labels, got, want, terms)
			}
		}
	}
}

func TestMatcherIndexes(t *testing.T) {
	var terms []any
	for i := range 2 * indexFrom {
		terms = append(terms, term(regionKey, []string{"r1"}, zoneKey, []string{fmt.Sprint("z", i)}))
	}
	m := compile(mustTerms(terms...))
	// The zone tells the terms apart, the region does not.
	if m.pivot != zoneKey || len(m.byValue) != 2*indexFrom || len(m.byValue["z3"]) != 1 {
		t.Fatalf("pivot %q with %d values, want %q with %d, one term each", m.pivot, len(m.byValue), zoneKey, 2*indexFrom)
	}
	if !m.matches(zoneNode("r1", "z3")) || m.matches(zoneNode("r2", "z3")) || m.matches(zoneNode("r1", "zz")) {
		t.Error("indexed matcher answers wrongly")
	}
}

func TestDescribeAndBounded(t *testing.T) {
	var terms []any
	for i := range 10 {
		terms = append(terms, zones(fmt.Sprint("z", i)))
	}
	got := describe(mustTerms(terms...))
	want := "[{topology.kubernetes.io/zone in [z0]} {topology.kubernetes.io/zone in [z1]} {topology.kubernetes.io/zone in [z2]} {topology.kubernetes.io/zone in [z3]} ... 6 more]"
	if got != want {
		t.Errorf("describe:\n got %s\nwant %s", got, want)
	}
	long := strings.Repeat("é", maxReason)
	b := bounded(long)
	if len(b) > maxReason || !strings.HasSuffix(b, "...") || !strings.HasPrefix(long, strings.TrimSuffix(b, "...")) {
		t.Errorf("bounded: %d bytes, %q...", len(b), b[:10])
	}
	if s := "short"; bounded(s) != s {
		t.Errorf("bounded(%q) = %q", s, bounded(s))
	}
}
