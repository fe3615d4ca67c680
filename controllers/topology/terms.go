package topology

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// MaxSegments bounds the number of CSI segments one term list may expand
// to, and therefore also the number of terms FromCSI produces and
// Intersect returns (every valid term expands to at least one segment).
//
// Why 1024: it is several times the number of zones of the largest public
// cloud, all regions together, so a real zone- or region-level constraint
// never comes near it, and it still leaves room for rack-level segments of
// a sizeable on-premises cluster. At that size a TopologyRequirement
// (requisite and preferred, two ~40-byte pairs per segment) stays near
// 200 KB, far under gRPC's default 4 MiB message limit, and a nodeAffinity
// of 1024 terms stays well under etcd's 1.5 MiB object limit. Beyond it the
// input is far more likely a mistake (values multiplied across keys) than
// a topology, and failing loudly beats sending a driver a megabyte. The
// zonepath driver accepts requirements of this size
// (driver/world.MaxSegmentsPerRequirement; controllers/README.md, "Bounds").
const MaxSegments = 1024

// MaxKeysPerTerm bounds the expressions of one term, and so the keys of
// one CSI segment FromCSI accepts.
//
// Why 8: a driver's topology keys are a handful (region, zone, rack, maybe
// host; zonepath has three), so 8 leaves room. The bound exists for the
// CRDs: their rule that keys are unique within a term costs the square of
// this number for every term, and at 16 the API server would refuse the
// CRD for exceeding its CEL cost budget.
const MaxKeysPerTerm = 8

// Errors wrapped by this package, for errors.Is. The messages around them
// name the offending index so that an event can point at it.
var (
	// ErrInvalidTerm marks a malformed TopologySelectorTerm.
	ErrInvalidTerm = errors.New("invalid topology term")
	// ErrInvalidSegment marks a malformed CSI topology segment.
	ErrInvalidSegment = errors.New("invalid CSI topology segment")
	// ErrTooManySegments marks an input or result beyond MaxSegments.
	ErrTooManySegments = errors.New("too many topology segments")
)

// Validate reports the first malformed term: a term without expressions
// or with more than MaxKeysPerTerm, an expression without values, a key
// used twice in one term, or a key or value that is not a valid label key
// or non-empty label value. It does not check MaxSegments; Expand does.
func Validate(terms []v1.TopologySelectorTerm) error {
	for i := range terms {
		if _, err := normalizeTerm(i, terms[i]); err != nil {
			return err
		}
	}
	return nil
}

// Normalize validates terms and returns them in canonical form: within a
// term, expressions sorted by key and values sorted without duplicates;
// terms in their original order with exact duplicates removed. The
// canonical form lets callers compare and patch nodeAffinity without
// churn. The input is not modified; nil or empty input returns nil.
func Normalize(terms []v1.TopologySelectorTerm) ([]v1.TopologySelectorTerm, error) {
	var out []v1.TopologySelectorTerm
	seen := make(map[string]struct{}, len(terms))
	for i := range terms {
		t, err := normalizeTerm(i, terms[i])
		if err != nil {
			return nil, err
		}
		out = appendUnique(out, seen, t)
	}
	return out, nil
}

// appendUnique appends a normalized term unless an equal one is in seen.
func appendUnique(out []v1.TopologySelectorTerm, seen map[string]struct{}, t v1.TopologySelectorTerm) []v1.TopologySelectorTerm {
	k := termKey(t)
	if _, dup := seen[k]; dup {
		return out
	}
	seen[k] = struct{}{}
	return append(out, t)
}

// normalizeTerm validates term i and returns a canonical deep copy.
func normalizeTerm(i int, t v1.TopologySelectorTerm) (v1.TopologySelectorTerm, error) {
	switch n := len(t.MatchLabelExpressions); {
	case n == 0:
		return v1.TopologySelectorTerm{}, fmt.Errorf("%w: terms[%d].matchLabelExpressions: must not be empty (an empty term selects no node)", ErrInvalidTerm, i)
	case n > MaxKeysPerTerm:
		return v1.TopologySelectorTerm{}, fmt.Errorf("%w: terms[%d].matchLabelExpressions: %d expressions, limit %d", ErrInvalidTerm, i, n, MaxKeysPerTerm)
	}
	exprs := make([]v1.TopologySelectorLabelRequirement, 0, len(t.MatchLabelExpressions))
	firstUse := make(map[string]int, len(t.MatchLabelExpressions))
	for j, e := range t.MatchLabelExpressions {
		path := fmt.Sprintf("terms[%d].matchLabelExpressions[%d]", i, j)
		if err := checkExpression(path, e); err != nil {
			return v1.TopologySelectorTerm{}, err
		}
		if prev, dup := firstUse[e.Key]; dup {
			// Two expressions on one key would be ANDed, which Expand
			// cannot represent as one value per key; the API server
			// rejects it in StorageClass too.
			return v1.TopologySelectorTerm{}, fmt.Errorf("%w: %s.key %q: duplicate of matchLabelExpressions[%d]", ErrInvalidTerm, path, e.Key, prev)
		}
		firstUse[e.Key] = j
		exprs = append(exprs, v1.TopologySelectorLabelRequirement{Key: e.Key, Values: sortedSet(e.Values)})
	}
	slices.SortFunc(exprs, func(a, b v1.TopologySelectorLabelRequirement) int { return strings.Compare(a.Key, b.Key) })
	return v1.TopologySelectorTerm{MatchLabelExpressions: exprs}, nil
}

// checkExpression validates one expression; path names it in errors.
func checkExpression(path string, e v1.TopologySelectorLabelRequirement) error {
	if err := checkKey(e.Key); err != nil {
		return fmt.Errorf("%w: %s.key %q: %v", ErrInvalidTerm, path, e.Key, err)
	}
	if len(e.Values) == 0 {
		return fmt.Errorf("%w: %s.values: must not be empty (key %q)", ErrInvalidTerm, path, e.Key)
	}
	for k, v := range e.Values {
		if err := checkValue(v); err != nil {
			return fmt.Errorf("%w: %s.values[%d] %q: %v", ErrInvalidTerm, path, k, v, err)
		}
	}
	return nil
}

// checkKey accepts label keys: terms are matched against node labels.
func checkKey(k string) error {
	if msgs := content.IsLabelKey(k); len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// checkValue accepts label values except the empty one: every value ends
// up in a CSI segment, and CSI requires segment values to be non-empty.
func checkValue(v string) error {
	if v == "" {
		return errors.New("must not be empty (CSI segment values are non-empty)")
	}
	if msgs := content.IsLabelValue(v); len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// sortedSet returns a sorted copy of values without duplicates: values
// are a set, and a canonical order makes equal sets compare equal.
func sortedSet(values []string) []string {
	out := slices.Clone(values)
	slices.Sort(out)
	return slices.Compact(out)
}

// termKey is an injective string form of a normalized term, used to drop
// duplicates. Lengths are written before every string so that no choice
// of keys and values can make two different terms collide.
func termKey(t v1.TopologySelectorTerm) string {
	var b strings.Builder
	for _, e := range t.MatchLabelExpressions {
		writeLenPrefixed(&b, e.Key)
		b.WriteString(strconv.Itoa(len(e.Values)))
		b.WriteByte('#')
		for _, v := range e.Values {
			writeLenPrefixed(&b, v)
		}
	}
	return b.String()
}

func writeLenPrefixed(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

// termSize is the number of segments a normalized term expands to, or
// MaxSegments+1 if it is larger; capping keeps the product from
// overflowing however many values a term lists.
func termSize(t v1.TopologySelectorTerm) int {
	n := 1
	for _, e := range t.MatchLabelExpressions {
		n *= len(e.Values)
		if n > MaxSegments {
			return MaxSegments + 1
		}
	}
	return n
}

// countSegments sums termSize over normalized terms and fails as soon as
// the sum passes MaxSegments, naming the term that crossed it.
func countSegments(terms []v1.TopologySelectorTerm) (int, error) {
	total := 0
	for i, t := range terms {
		total += termSize(t)
		if total > MaxSegments {
			return 0, fmt.Errorf("%w: terms expand to more than %d segments (limit reached at terms[%d], which alone expands to %s)",
				ErrTooManySegments, MaxSegments, i, sizeString(termSize(t)))
		}
	}
	return total, nil
}

func sizeString(n int) string {
	if n > MaxSegments {
		return "more than " + strconv.Itoa(MaxSegments)
	}
	return strconv.Itoa(n)
}
