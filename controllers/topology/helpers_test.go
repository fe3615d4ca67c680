package topology

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
)

const (
	rk = "topology.kubernetes.io/region"
	zk = "topology.kubernetes.io/zone"
	kk = "zonepath.csi.dev/rack"
)

func expr(key string, values ...string) v1.TopologySelectorLabelRequirement {
	return v1.TopologySelectorLabelRequirement{Key: key, Values: values}
}

func term(exprs ...v1.TopologySelectorLabelRequirement) v1.TopologySelectorTerm {
	return v1.TopologySelectorTerm{MatchLabelExpressions: exprs}
}

func terms(ts ...v1.TopologySelectorTerm) []v1.TopologySelectorTerm { return ts }

// seg builds a CSI segment from key, value pairs.
func seg(kv ...string) *csi.Topology {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &csi.Topology{Segments: m}
}

func segs(ss ...*csi.Topology) []*csi.Topology { return ss }

// node builds a label map from key, value pairs.
func node(kv ...string) map[string]string { return seg(kv...).Segments }

// fmtSegs renders segments deterministically for failure messages and
// exact-order comparison.
func fmtSegs(ss []*csi.Topology) string {
	parts := make([]string, 0, len(ss))
	for _, s := range ss {
		parts = append(parts, fmtLabels(s.GetSegments()))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtLabels(m map[string]string) string {
	kv := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		kv = append(kv, k+"="+m[k])
	}
	return "{" + strings.Join(kv, ",") + "}"
}

func fmtTerms(ts []v1.TopologySelectorTerm) string {
	if ts == nil {
		return "nil"
	}
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		var es []string
		for _, e := range t.MatchLabelExpressions {
			es = append(es, e.Key+" in ["+strings.Join(e.Values, ",")+"]")
		}
		parts = append(parts, "("+strings.Join(es, " && ")+")")
	}
	return "[" + strings.Join(parts, " || ") + "]"
}

// dedupSegs keeps the first occurrence of each segment, in order.
func dedupSegs(ss []*csi.Topology) []*csi.Topology {
	var out []*csi.Topology
	seen := map[string]bool{}
	for _, s := range ss {
		k := segmentKey(s.GetSegments())
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	return out
}

func segSet(ss []*csi.Topology) map[string]bool {
	out := map[string]bool{}
	for _, s := range ss {
		out[segmentKey(s.GetSegments())] = true
	}
	return out
}

// within reports whether every pair of s is also in labels: a node with
// these labels lies in segment s.
func within(s map[string]string, labels map[string]string) bool {
	for k, v := range s {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

func inAnySegment(ss []*csi.Topology, labels map[string]string) bool {
	return slices.ContainsFunc(ss, func(s *csi.Topology) bool { return within(s.GetSegments(), labels) })
}

// Universe used by property tests and fuzz targets: three keys, three
// values, every key possibly absent: 4^3 = 64 nodes.
var (
	uKeys = []string{rk, zk, kk}
	uVals = []string{"a", "b", "c"}
)

// universe returns the shared node list; callers must not modify it.
func universe() []map[string]string { return universeNodes }

var universeNodes = buildUniverse()

func buildUniverse() []map[string]string {
	nodes := []map[string]string{{}}
	for _, k := range uKeys {
		var next []map[string]string
		for _, n := range nodes {
			next = append(next, n) // key absent
			for _, v := range uVals {
				m := maps.Clone(n)
				m[k] = v
				next = append(next, m)
			}
		}
		nodes = next
	}
	return nodes
}

// matches reads terms as the scheduler and the volume binder do, with
// Kubernetes' own MatchTopologySelectorTerms: an empty list matches every
// node, an empty term none.
func matches(ts []v1.TopologySelectorTerm, node map[string]string) bool {
	return v1helper.MatchTopologySelectorTerms(ts, labels.Set(node))
}

// matcher is matches with each term's selector built once, for the
// property tests that ask about every node of the universe:
// MatchTopologySelectorTerms builds the selectors on every call, which
// dominates their cost. TestMatcherAgreesWithKubernetes holds the two
// together.
func matcher(ts []v1.TopologySelectorTerm) func(map[string]string) bool {
	if len(ts) == 0 {
		return func(map[string]string) bool { return true } // empty list matches all
	}
	var sels []labels.Selector
	for _, t := range ts {
		if len(t.MatchLabelExpressions) == 0 {
			continue // nil or empty term selects nothing
		}
		if sel, err := v1helper.TopologySelectorRequirementsAsSelector(t.MatchLabelExpressions); err == nil {
			sels = append(sels, sel) // Kubernetes skips terms it cannot parse
		}
	}
	return func(node map[string]string) bool {
		return slices.ContainsFunc(sels, func(s labels.Selector) bool { return s.Matches(labels.Set(node)) })
	}
}

// resultMatcher reads an Intersect result as a constraint.
func resultMatcher(ts []v1.TopologySelectorTerm, ok bool) func(map[string]string) bool {
	if !ok {
		return func(map[string]string) bool { return false }
	}
	return matcher(ts)
}

// segmentsMatcher admits the nodes that lie in one of segs.
func segmentsMatcher(segs []*csi.Topology) func(map[string]string) bool {
	return func(node map[string]string) bool { return inAnySegment(segs, node) }
}

// disagreement returns the first node of nodes that exactly one of a and
// b admits, and whether a admits it; ok is false when they agree on all.
func disagreement(nodes []map[string]string, a, b func(map[string]string) bool) (node map[string]string, byA, ok bool) {
	for _, n := range nodes {
		if x := a(n); x != b(n) {
			return n, x, true
		}
	}
	return nil, false, false
}

// randTerms draws 0..maxTerms valid terms over the universe.
func randTerms(r *rand.Rand, maxTerms int) []v1.TopologySelectorTerm {
	n := r.IntN(maxTerms + 1)
	var out []v1.TopologySelectorTerm
	for range n {
		keys := slices.Clone(uKeys)
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		var t v1.TopologySelectorTerm
		for _, k := range keys[:1+r.IntN(len(keys))] {
			vals := slices.Clone(uVals)
			r.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
			t.MatchLabelExpressions = append(t.MatchLabelExpressions, expr(k, vals[:1+r.IntN(len(vals))]...))
		}
		out = append(out, t)
	}
	return out
}

// randSegments draws 0..maxSegs segments over the universe, duplicates
// likely.
func randSegments(r *rand.Rand, maxSegs int) []*csi.Topology {
	n := r.IntN(maxSegs + 1)
	var out []*csi.Topology
	for range n {
		m := map[string]string{}
		for _, k := range uKeys {
			if r.IntN(3) > 0 {
				m[k] = uVals[r.IntN(len(uVals))]
			}
		}
		if len(m) == 0 {
			m[zk] = uVals[r.IntN(len(uVals))]
		}
		out = append(out, &csi.Topology{Segments: m})
	}
	return out
}

// byteReader turns fuzz bytes into structure; it yields zeros once the
// input is exhausted so every input decodes to something.
type byteReader struct{ b []byte }

func (r *byteReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Alphabets for decoded keys and values: the universe plus a few
// malformed entries so that the error paths are fuzzed too.
var (
	fuzzKeys = append(slices.Clone(uKeys), "", "Bad Key", "a/b/c", "-x")
	fuzzVals = append(slices.Clone(uVals), "", "-bad", strings.Repeat("x", 64))
)

// pick returns an alphabet entry, or for bytes with the high bit set a
// raw string of the following bytes.
func (r *byteReader) pick(alphabet []string) string {
	c := r.next()
	if c&0x80 == 0 {
		return alphabet[int(c)%len(alphabet)]
	}
	n := int(c & 0x07)
	var b []byte
	for range n {
		b = append(b, r.next())
	}
	return string(b)
}

func decodeSegments(r *byteReader) []*csi.Topology {
	n := int(r.next() % 9)
	var out []*csi.Topology
	for range n {
		c := r.next()
		if c == 0xff {
			out = append(out, nil)
			continue
		}
		m := map[string]string{}
		for range int(c % 4) {
			m[r.pick(fuzzKeys)] = r.pick(fuzzVals)
		}
		out = append(out, &csi.Topology{Segments: m})
	}
	return out
}

// decodeTerms reads a term list. In wide mode an expression may list up
// to 255 distinct values, so that expansion crosses MaxSegments.
func decodeTerms(r *byteReader, wide bool) []v1.TopologySelectorTerm {
	n := int(r.next() % 5)
	var out []v1.TopologySelectorTerm
	for range n {
		var t v1.TopologySelectorTerm
		for range int(r.next() % 4) {
			k := r.pick(fuzzKeys)
			var vals []string
			if wide && r.next()%2 == 1 {
				for i := range int(r.next()) {
					vals = append(vals, "v"+strconv.Itoa(i))
				}
			} else {
				for range int(r.next() % 4) {
					vals = append(vals, r.pick(fuzzVals))
				}
			}
			t.MatchLabelExpressions = append(t.MatchLabelExpressions, expr(k, vals...))
		}
		out = append(out, t)
	}
	return out
}

// checkIntersection asserts the intersection laws for a and b over the
// universe and returns the result for further checks.
func checkIntersection(t *testing.T, a, b []v1.TopologySelectorTerm) {
	t.Helper()
	ab, okAB, errAB := Intersect(a, b)
	ba, okBA, errBA := Intersect(b, a)
	if (errAB == nil) != (errBA == nil) {
		t.Fatalf("Intersect not symmetric in errors: a∩b err=%v, b∩a err=%v", errAB, errBA)
	}
	if errAB != nil {
		return
	}
	if len(ab) > MaxSegments {
		t.Fatalf("result has %d terms, over MaxSegments", len(ab))
	}
	if _, err := Expand(ab); err != nil {
		t.Fatalf("result does not expand within bound: %v", err)
	}
	if !okAB && ab != nil {
		t.Fatalf("!ok with non-nil terms %s", fmtTerms(ab))
	}
	inAB, inBA := resultMatcher(ab, okAB), resultMatcher(ba, okBA)
	inA, inB := matcher(a), matcher(b)
	both := func(n map[string]string) bool { return inA(n) && inB(n) }
	if n, got, ok := disagreement(universe(), inAB, both); ok {
		t.Fatalf("node %s: matches(a∩b)=%v, want matches(a)&&matches(b)=%v\na=%s\nb=%s\na∩b=%s (ok=%v)",
			fmtLabels(n), got, !got, fmtTerms(a), fmtTerms(b), fmtTerms(ab), okAB)
	}
	if n, _, ok := disagreement(universe(), inAB, inBA); ok {
		t.Fatalf("node %s: a∩b and b∩a disagree\na=%s\nb=%s", fmtLabels(n), fmtTerms(a), fmtTerms(b))
	}
}
