package snapshottopology

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// indexFrom is the number of terms from which a matcher indexes its terms
// by one key's value. Below it a linear scan is as fast as a map lookup;
// above it, a content accessible from a thousand racks or zones still
// costs a node one map lookup and a few term checks instead of a
// thousand.
const indexFrom = 8

// setFrom is the number of values from which an expression looks values
// up in a set rather than scanning them.
const setFrom = 8

// matcher is a compiled term list. It answers exactly what Kubernetes'
// MatchTopologySelectorTerms answers (an empty list matches every node,
// an empty term matches none, expressions AND, terms OR) but without
// allocating: the library builds a label selector per term on every call,
// and Filter sees thousands of nodes per pod. TestMatcherAgreesWithKubernetes
// holds it to the library.
type matcher struct {
	terms []compiledTerm
	// pivot is a key every term constrains; byValue maps each of its
	// values to the terms that allow it, and rest holds each term without
	// its first expression on the pivot, which the lookup has already
	// satisfied. All empty when not indexed.
	pivot   string
	byValue map[string][]int
	rest    []compiledTerm
}

// compiledTerm is a TopologySelectorTerm: its expressions, ANDed.
type compiledTerm []expr

// expr is one "key in values" requirement.
type expr struct {
	key    string
	values []string
	set    map[string]struct{} // non-nil when values are many
}

// compile builds the matcher of terms; it copies nothing it must not.
func compile(terms []v1.TopologySelectorTerm) matcher {
	m := matcher{terms: make([]compiledTerm, len(terms))}
	for i, t := range terms {
		m.terms[i] = compileTerm(t)
	}
	if len(terms) >= indexFrom {
		m.index()
	}
	return m
}

func compileTerm(t v1.TopologySelectorTerm) compiledTerm {
	out := make(compiledTerm, len(t.MatchLabelExpressions))
	for i, e := range t.MatchLabelExpressions {
		out[i] = expr{key: e.Key, values: e.Values}
		if len(e.Values) >= setFrom {
			out[i].set = make(map[string]struct{}, len(e.Values))
			for _, v := range e.Values {
				out[i].set[v] = struct{}{}
			}
		}
	}
	return out
}

// index picks as pivot, among the keys every term constrains, the one
// with the most distinct values (the zone rather than the region, in the
// terms FromCSI writes), so that a node's pivot value selects as few
// terms as possible, and maps those values to terms. A term that
// constrains the pivot twice is listed under the values of its first
// expression on it; its full check still applies the second.
func (m *matcher) index() {
	for _, e := range m.terms[0] {
		if !m.allConstrain(e.key) {
			continue
		}
		byValue := make(map[string][]int)
		for i, t := range m.terms {
			for _, v := range t.first(e.key).values {
				byValue[v] = append(byValue[v], i)
			}
		}
		if len(byValue) > len(m.byValue) {
			m.pivot, m.byValue = e.key, byValue
		}
	}
	if m.pivot == "" {
		return
	}
	m.rest = make([]compiledTerm, len(m.terms))
	for i, t := range m.terms {
		j := slices.IndexFunc(t, func(e expr) bool { return e.key == m.pivot })
		m.rest[i] = slices.Delete(slices.Clone(t), j, j+1)
	}
}

func (m *matcher) allConstrain(key string) bool {
	for _, t := range m.terms {
		if t.first(key) == nil {
			return false
		}
	}
	return true
}

// first returns the term's first expression on key, or nil.
func (t compiledTerm) first(key string) *expr {
	for i := range t {
		if t[i].key == key {
			return &t[i]
		}
	}
	return nil
}

// matches reports whether a node with these labels satisfies the list.
func (m *matcher) matches(labels map[string]string) bool {
	if len(m.terms) == 0 {
		return true
	}
	if m.pivot == "" {
		for i := range m.terms {
			if m.terms[i].matches(labels) {
				return true
			}
		}
		return false
	}
	v, ok := labels[m.pivot]
	if !ok {
		return false
	}
	for _, i := range m.byValue[v] {
		if m.rest[i].allow(labels) {
			return true
		}
	}
	return false
}

// matches ANDs the term's expressions; an empty term matches nothing.
func (t compiledTerm) matches(labels map[string]string) bool {
	return len(t) > 0 && t.allow(labels)
}

// allow ANDs the expressions; with none it allows every node, which is
// right for the rest of an indexed term, not for a whole term.
func (t compiledTerm) allow(labels map[string]string) bool {
	for i := range t {
		if !t[i].allows(labels) {
			return false
		}
	}
	return true
}

func (e *expr) allows(labels map[string]string) bool {
	v, ok := labels[e.key]
	if !ok {
		return false
	}
	if e.set != nil {
		_, ok = e.set[v]
		return ok
	}
	return slices.Contains(e.values, v)
}
