package topology

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
)

// FromCSI converts CSI segments, as a driver returns them in
// Snapshot.accessible_topology, into the terms stored in
// VolumeSnapshotContent.spec.nodeAffinity: one term per segment, one
// single-value expression per key, keys sorted, terms in segment order
// with duplicate segments dropped. It never folds segments together (see
// controllers/README.md, "Why the conversion is lossless"). Nil or empty
// input returns nil: no constraint.
//
// A nil or empty segment, a key that is not a label key, an empty or
// invalid label value, or more than MaxSegments segments is an error: such
// data would either never match a node or describe "anywhere" by accident,
// and the caller should report the driver's answer rather than store it.
func FromCSI(segments []*csi.Topology) ([]v1.TopologySelectorTerm, error) {
	if len(segments) > MaxSegments {
		return nil, fmt.Errorf("%w: %d segments, limit %d", ErrTooManySegments, len(segments), MaxSegments)
	}
	var out []v1.TopologySelectorTerm
	seen := make(map[string]struct{}, len(segments))
	for i, s := range segments {
		t, err := segmentTerm(i, s)
		if err != nil {
			return nil, err
		}
		out = appendUnique(out, seen, t)
	}
	return out, nil
}

// segmentTerm validates segment i and turns it into a normalized term.
func segmentTerm(i int, s *csi.Topology) (v1.TopologySelectorTerm, error) {
	segs := s.GetSegments()
	switch n := len(segs); {
	case n == 0:
		return v1.TopologySelectorTerm{}, fmt.Errorf("%w: segments[%d]: must have at least one key", ErrInvalidSegment, i)
	case n > MaxKeysPerTerm:
		// Its term would exceed the CRDs' bound and the write would fail.
		return v1.TopologySelectorTerm{}, fmt.Errorf("%w: segments[%d]: %d keys, limit %d", ErrInvalidSegment, i, n, MaxKeysPerTerm)
	}
	exprs := make([]v1.TopologySelectorLabelRequirement, 0, len(segs))
	for _, k := range slices.Sorted(maps.Keys(segs)) {
		if err := checkKey(k); err != nil {
			return v1.TopologySelectorTerm{}, fmt.Errorf("%w: segments[%d] key %q: %v", ErrInvalidSegment, i, k, err)
		}
		if err := checkValue(segs[k]); err != nil {
			return v1.TopologySelectorTerm{}, fmt.Errorf("%w: segments[%d] key %q value %q: %v", ErrInvalidSegment, i, k, segs[k], err)
		}
		exprs = append(exprs, v1.TopologySelectorLabelRequirement{Key: k, Values: []string{segs[k]}})
	}
	return v1.TopologySelectorTerm{MatchLabelExpressions: exprs}, nil
}

// Expand converts terms into the CSI segments they admit: each term's
// cartesian product over its keys (sorted), values in sorted order with
// the last key varying fastest, terms in order, duplicate segments
// dropped. A term with region in [r1] and zone in [a,b] gives {r1,a} then
// {r1,b}. Nil or empty input returns nil.
//
// Malformed terms (see Validate) are errors, and so are terms that would
// expand to more than MaxSegments segments; the count is taken after
// identical terms are merged but before overlapping products are, so the
// work done is bounded by MaxSegments whatever the input.
func Expand(terms []v1.TopologySelectorTerm) ([]*csi.Topology, error) {
	norm, err := Normalize(terms)
	if err != nil {
		return nil, err
	}
	total, err := countSegments(norm)
	if err != nil || total == 0 {
		return nil, err
	}
	out := make([]*csi.Topology, 0, total)
	seen := make(map[string]struct{}, total)
	for _, t := range norm {
		expandTerm(t, func(seg map[string]string) {
			k := segmentKey(seg)
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				out = append(out, &csi.Topology{Segments: seg})
			}
		})
	}
	return out, nil
}

// expandTerm calls emit with a fresh map for every combination of one
// value per expression, counting like an odometer over the value lists.
func expandTerm(t v1.TopologySelectorTerm, emit func(map[string]string)) {
	exprs := t.MatchLabelExpressions
	idx := make([]int, len(exprs))
	for {
		seg := make(map[string]string, len(exprs))
		for j, e := range exprs {
			seg[e.Key] = e.Values[idx[j]]
		}
		emit(seg)
		if !advance(idx, exprs) {
			return
		}
	}
}

// advance steps the odometer; it reports false after the last combination.
func advance(idx []int, exprs []v1.TopologySelectorLabelRequirement) bool {
	for j := len(idx) - 1; j >= 0; j-- {
		idx[j]++
		if idx[j] < len(exprs[j].Values) {
			return true
		}
		idx[j] = 0
	}
	return false
}

// segmentKey is an injective string form of a segment, for dropping
// duplicates; see termKey for why lengths are included.
func segmentKey(seg map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(seg)) {
		writeLenPrefixed(&b, k)
		writeLenPrefixed(&b, seg[k])
	}
	return b.String()
}

// Requirement builds the CSI TopologyRequirement of a CreateVolume or
// CreateSnapshot request from terms (StorageClass.allowedTopologies, a
// VolumeSnapshotClass's, or an Intersect result). Nil or empty terms give
// a nil requirement: the request carries no topology constraint.
//
// Requisite is Expand(terms). Preferred holds the same segments (CSI
// requires preferred to be within requisite) rotated so that it starts at
// index fnv32(spreadKey) mod len: the external-provisioner's rule for
// Immediate binding, which spreads volumes of different claims across
// zones while giving one claim the same answer on every retry. An empty
// spreadKey means no rotation: preferred is in requisite order. Preferred
// holds copies, so a caller changing one list leaves the other intact.
func Requirement(terms []v1.TopologySelectorTerm, spreadKey string) (*csi.TopologyRequirement, error) {
	requisite, err := Expand(terms)
	if err != nil || len(requisite) == 0 {
		return nil, err
	}
	shift := spreadOffset(spreadKey, len(requisite))
	preferred := make([]*csi.Topology, 0, len(requisite))
	for i := range requisite {
		s := requisite[(i+shift)%len(requisite)]
		preferred = append(preferred, &csi.Topology{Segments: maps.Clone(s.Segments)})
	}
	return &csi.TopologyRequirement{Requisite: requisite, Preferred: preferred}, nil
}

// spreadOffset maps key to a rotation in [0, n); "" maps to 0.
func spreadOffset(key string, n int) int {
	if key == "" {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key)) // hash.Hash.Write never fails
	return int(h.Sum32() % uint32(n))
}
