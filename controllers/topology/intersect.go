package topology

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Intersect returns the terms admitting exactly the nodes that both a and
// b admit, as the provisioner needs for StorageClass.allowedTopologies ∩
// snapshot nodeAffinity. Read the results as:
//
//	ok && terms == nil:  no constraint (a and b were both empty)
//	ok && terms != nil:  constrained to terms
//	!ok:                 constrained to nothing; fail with an event
//
// An empty list is the identity (the other side is returned normalized).
// Otherwise each term of a is merged with each term of b: per key, the
// common values when both name the key, the one side's values when only
// one does; a merge with no common value on some key is dropped, and so
// are duplicates. Terms come out normalized (see Normalize) in the order
// a's terms, then b's terms, are listed.
//
// Malformed terms are errors naming the side ("first" or "second"). So is
// a side longer than MaxSegments terms, which bounds the pairwise work,
// and a result that would expand to more than MaxSegments segments, which
// bounds the result: it exists to become a CSI requirement.
func Intersect(a, b []v1.TopologySelectorTerm) (terms []v1.TopologySelectorTerm, ok bool, err error) {
	na, err := normalizeSide("first", a)
	if err != nil {
		return nil, false, err
	}
	nb, err := normalizeSide("second", b)
	if err != nil {
		return nil, false, err
	}
	switch {
	case len(na) == 0:
		return boundedIdentity(nb)
	case len(nb) == 0:
		return boundedIdentity(na)
	}
	out, err := mergeAll(na, nb)
	if err != nil {
		return nil, false, err
	}
	return out, len(out) > 0, nil
}

// normalizeSide normalizes one operand, naming it in errors.
func normalizeSide(side string, terms []v1.TopologySelectorTerm) ([]v1.TopologySelectorTerm, error) {
	if len(terms) > MaxSegments {
		return nil, fmt.Errorf("%s terms: %w: %d terms, limit %d", side, ErrTooManySegments, len(terms), MaxSegments)
	}
	norm, err := Normalize(terms)
	if err != nil {
		return nil, fmt.Errorf("%s terms: %w", side, err)
	}
	return norm, nil
}

// boundedIdentity returns one normalized operand as the result, under the
// same bound as a merged result so callers see one rule.
func boundedIdentity(terms []v1.TopologySelectorTerm) ([]v1.TopologySelectorTerm, bool, error) {
	if _, err := countSegments(terms); err != nil {
		return nil, false, fmt.Errorf("intersection: %w", err)
	}
	return terms, true, nil
}

// mergeAll merges every pair and stops as soon as the result's expansion
// passes MaxSegments; each kept term counts at least one segment, so the
// result never holds more than MaxSegments terms.
func mergeAll(a, b []v1.TopologySelectorTerm) ([]v1.TopologySelectorTerm, error) {
	var out []v1.TopologySelectorTerm
	seen := make(map[string]struct{})
	total := 0
	for i, ta := range a {
		for j, tb := range b {
			m, ok := mergeTerms(ta, tb)
			if !ok {
				continue
			}
			before := len(out)
			if out = appendUnique(out, seen, m); len(out) == before {
				continue
			}
			if total += termSize(m); total > MaxSegments {
				return nil, fmt.Errorf("intersection: %w: more than %d segments (limit reached merging first terms[%d] with second terms[%d])",
					ErrTooManySegments, MaxSegments, i, j)
			}
		}
	}
	return out, nil
}

// mergeTerms ANDs two normalized terms by a merge join over their sorted
// keys. It reports false when some shared key has no common value, since
// that term could match no node.
func mergeTerms(a, b v1.TopologySelectorTerm) (v1.TopologySelectorTerm, bool) {
	x, y := a.MatchLabelExpressions, b.MatchLabelExpressions
	out := make([]v1.TopologySelectorLabelRequirement, 0, len(x)+len(y))
	for len(x) > 0 || len(y) > 0 {
		switch c := compareHeads(x, y); {
		case c < 0:
			out, x = append(out, cloneExpr(x[0])), x[1:]
		case c > 0:
			out, y = append(out, cloneExpr(y[0])), y[1:]
		default:
			vals := intersectSorted(x[0].Values, y[0].Values)
			if len(vals) == 0 {
				return v1.TopologySelectorTerm{}, false
			}
			out = append(out, v1.TopologySelectorLabelRequirement{Key: x[0].Key, Values: vals})
			x, y = x[1:], y[1:]
		}
	}
	return v1.TopologySelectorTerm{MatchLabelExpressions: out}, true
}

// compareHeads orders the next keys of a merge join; an exhausted side
// sorts last so the other side drains.
func compareHeads(x, y []v1.TopologySelectorLabelRequirement) int {
	switch {
	case len(x) == 0:
		return 1
	case len(y) == 0:
		return -1
	}
	return strings.Compare(x[0].Key, y[0].Key)
}

func cloneExpr(e v1.TopologySelectorLabelRequirement) v1.TopologySelectorLabelRequirement {
	return v1.TopologySelectorLabelRequirement{Key: e.Key, Values: append([]string(nil), e.Values...)}
}

// intersectSorted returns the common elements of two sorted, duplicate-
// free lists, sorted.
func intersectSorted(x, y []string) []string {
	var out []string
	for len(x) > 0 && len(y) > 0 {
		switch c := strings.Compare(x[0], y[0]); {
		case c < 0:
			x = x[1:]
		case c > 0:
			y = y[1:]
		default:
			out = append(out, x[0])
			x, y = x[1:], y[1:]
		}
	}
	return out
}
