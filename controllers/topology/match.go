package topology

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Matches reports whether a node with the given labels satisfies terms:
// at least one term (OR) whose every expression (AND) names a key the
// node has, with the node's value among the expression's values.
//
// It follows Kubernetes' own MatchTopologySelectorTerms so the scheduler
// plugin agrees with the volume binder: an empty list matches every node
// (no constraint), and a term without expressions matches no node. It
// does not validate but reads malformed terms literally, as Kubernetes
// does: an expression without values matches nothing, and two expressions
// on one key must both hold.
func Matches(terms []v1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	return slices.ContainsFunc(terms, func(t v1.TopologySelectorTerm) bool {
		return termMatches(t, nodeLabels)
	})
}

// termMatches ANDs a term's expressions; an empty term matches nothing.
func termMatches(t v1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(t.MatchLabelExpressions) == 0 {
		return false
	}
	for _, e := range t.MatchLabelExpressions {
		v, ok := nodeLabels[e.Key]
		if !ok || !slices.Contains(e.Values, v) {
			return false
		}
	}
	return true
}
