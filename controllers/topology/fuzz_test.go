package topology

import (
	"errors"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// Seeds: bytes decode through byteReader (helpers_test.go). Segment
// seeds are written out: a count, then per segment a pair count and
// key/value alphabet indexes; 0xff is a nil segment and 0x8n starts a raw
// n-byte string. Term seeds are built by encTerms.
var segmentSeeds = [][]byte{
	{},
	{1, 2, 0, 0, 1, 0},                     // {region=a, zone=a}
	{2, 2, 0, 0, 1, 0, 2, 0, 1, 1, 1},      // {r=a,z=a} {r=b,z=b}: must not fold
	{3, 1, 1, 0, 1, 1, 1, 1, 1, 0},         // duplicate segments
	{2, 1, 1, 0, 0xff},                     // nil segment
	{1, 0},                                 // empty segment
	{1, 1, 0x83, 'a', '/', 'b', 0x81, 'x'}, // raw key and value
	{1, 1, 4, 0},                           // invalid key
	{1, 1, 1, 3},                           // empty value
}

// Alphabet indexes for encTerms (see fuzzKeys and fuzzVals).
const (
	kR, kZ, kRack, kEmpty, kBad = 0, 1, 2, 3, 4
	vA, vB, vC, vEmpty, vBad    = 0, 1, 2, 3, 4
)

// encTerms encodes a term list for decodeTerms. A term is a list of
// expressions; an expression is a key index followed by value indexes,
// or, in wide mode, a key index and a negative value count -n for the n
// generated values v0..v(n-1).
func encTerms(wide bool, ts ...[][]int) []byte {
	b := []byte{byte(len(ts))}
	for _, t := range ts {
		b = append(b, byte(len(t)))
		for _, e := range t {
			b = append(b, byte(e[0]))
			if wide && len(e) == 2 && e[1] < 0 {
				b = append(b, 1, byte(-e[1]))
				continue
			}
			if wide {
				b = append(b, 0)
			}
			b = append(b, byte(len(e)-1))
			for _, v := range e[1:] {
				b = append(b, byte(v))
			}
		}
	}
	return b
}

// pair encodes FuzzIntersect's two lists: a narrow, b wide.
func pair(a, b []byte) []byte { return append(append([]byte{}, a...), b...) }

var intersectSeeds = [][]byte{
	{},
	pair(encTerms(false, [][]int{{kZ, vA}}), encTerms(true, [][]int{{kR, vA}})), // zone a ∩ region a
	pair(encTerms(false, [][]int{{kZ, vA}}), encTerms(true, [][]int{{kZ, vB}})), // zone a ∩ zone b: nothing
	pair(encTerms(false, [][]int{{kR, vA}, {kZ, vA}}, [][]int{{kR, vB}, {kZ, vB}}), // snapshot {a,a},{b,b}
		encTerms(true, [][]int{{kZ, vA, vB, vC}})), // ∩ zones a, b, c
	pair(encTerms(false, [][]int{}), encTerms(true, [][]int{{kZ, vA}})),              // empty term
	pair(encTerms(false, [][]int{{kZ, vA}, {kZ, vB}}), nil),                          // duplicate key
	pair(encTerms(false, [][]int{{kZ}}), encTerms(true, [][]int{{kR, vA}})),          // no values
	pair(encTerms(false, [][]int{{kBad, vA}}), encTerms(true, [][]int{{kR, vBad}})),  // invalid key, value
	pair(encTerms(false, [][]int{{kZ, vA}}), encTerms(true, [][]int{{kRack, -255}})), // 255 segments
	pair(encTerms(false, [][]int{{kZ, vA}}, [][]int{{kZ, vB}}, [][]int{{kZ, vC}}), // 3 zones ∩
		encTerms(true, [][]int{{kRack, -255}}, [][]int{{kR, vA}, {kRack, -255}})), // 2 × 255 racks: over
}

var expandSeeds = [][]byte{
	{},
	encTerms(true, [][]int{{kR, vA}, {kZ, vA, vB}}),                    // {a,a},{a,b}
	encTerms(true, [][]int{{kZ, -200}}),                                // 200 segments
	encTerms(true, [][]int{{kR, -255}, {kZ, -255}, {kRack, -255}}),     // 255^3: over
	encTerms(true, [][]int{{kZ, -255}}, [][]int{{kZ, -255}}),           // identical: 255
	encTerms(true, [][]int{{kZ, -255}}, [][]int{{kR, -5}, {kZ, -255}}), // 255 + 1275: over
	encTerms(true, [][]int{{kZ, vA}}, [][]int{}),                       // empty term
	encTerms(true, [][]int{{kEmpty, vA}}),                              // empty key
	encTerms(true, [][]int{{kZ, vEmpty}}),                              // empty value
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range segmentSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := decodeSegments(&byteReader{data})
		ts, err := FromCSI(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidSegment) && !errors.Is(err, ErrTooManySegments) {
				t.Fatalf("FromCSI(%s): unexpected error kind: %v", fmtSegs(in), err)
			}
			if allSegmentsValid(in) {
				t.Fatalf("FromCSI(%s) rejected valid segments: %v", fmtSegs(in), err)
			}
			return
		}
		if !allSegmentsValid(in) {
			t.Fatalf("FromCSI(%s) accepted invalid segments", fmtSegs(in))
		}
		if err := Validate(ts); err != nil {
			t.Fatalf("FromCSI produced invalid terms %s: %v", fmtTerms(ts), err)
		}
		checkOneValuePerKey(t, ts)
		back, err := Expand(ts)
		if err != nil {
			t.Fatalf("Expand(FromCSI(%s)): %v", fmtSegs(in), err)
		}
		if fmtSegs(back) != fmtSegs(dedupSegs(in)) || !sameSet(segSet(back), segSet(in)) {
			t.Fatalf("round trip %s -> %s -> %s", fmtSegs(in), fmtTerms(ts), fmtSegs(back))
		}
		for _, s := range in {
			if !matches(ts, s.GetSegments()) {
				t.Fatalf("terms %s reject their own segment %s", fmtTerms(ts), fmtLabels(s.GetSegments()))
			}
		}
		if n, got, ok := disagreement(universe(), matcher(ts), segmentsMatcher(in)); len(in) > 0 && ok {
			t.Fatalf("segments %s, node %s: matches = %v", fmtSegs(in), fmtLabels(n), got)
		}
	})
}

// allSegmentsValid is the acceptance rule FromCSI must implement, stated
// independently of its code.
func allSegmentsValid(in []*csi.Topology) bool {
	if len(in) > MaxSegments {
		return false
	}
	for _, s := range in {
		if len(s.GetSegments()) == 0 {
			return false
		}
		for k, v := range s.GetSegments() {
			if len(content.IsLabelKey(k)) > 0 || v == "" || len(content.IsLabelValue(v)) > 0 {
				return false
			}
		}
	}
	return true
}

func FuzzIntersect(f *testing.F) {
	for _, s := range intersectSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{data}
		// b may list up to 255 values per key so that merges cross
		// MaxSegments and the bound's symmetry is fuzzed as well.
		a, b := decodeTerms(r, false), decodeTerms(r, true)
		got, ok, err := Intersect(a, b)
		if err != nil {
			if !errors.Is(err, ErrInvalidTerm) && !errors.Is(err, ErrTooManySegments) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if errors.Is(err, ErrInvalidTerm) && Validate(a) == nil && Validate(b) == nil {
				t.Fatalf("Intersect rejected valid terms: %v", err)
			}
		} else {
			if Validate(a) != nil || Validate(b) != nil {
				t.Fatalf("Intersect accepted invalid terms a=%s b=%s", fmtTerms(a), fmtTerms(b))
			}
			norm, nerr := Normalize(got)
			if diff := cmp.Diff(got, norm); nerr != nil || diff != "" {
				t.Fatalf("result %s is not in normal form (%v; -result +normalized):\n%s", fmtTerms(got), nerr, diff)
			}
			if ok != (len(got) > 0 || (len(a) == 0 && len(b) == 0)) {
				t.Fatalf("ok=%v for %s from a=%s b=%s", ok, fmtTerms(got), fmtTerms(a), fmtTerms(b))
			}
		}
		checkIntersection(t, a, b)
	})
}

func FuzzExpand(f *testing.F) {
	for _, s := range expandSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ts := decodeTerms(&byteReader{data}, true)
		out, err := Expand(ts)
		if errors.Is(err, ErrInvalidTerm) {
			if Validate(ts) == nil {
				t.Fatalf("Expand rejected valid terms: %v", err)
			}
			return
		}
		if Validate(ts) != nil {
			t.Fatalf("Expand accepted invalid terms %s (err %v)", fmtTerms(ts), err)
		}
		want := naiveExpansionCount(t, ts)
		if errors.Is(err, ErrTooManySegments) {
			if want <= MaxSegments {
				t.Fatalf("Expand refused %d segments: %v", want, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("unexpected error kind: %v", err)
		}
		if want > MaxSegments || len(out) > MaxSegments {
			t.Fatalf("Expand returned %d segments for a count of %d, over MaxSegments", len(out), want)
		}
		if len(segSet(out)) != len(out) {
			t.Fatalf("Expand returned duplicates")
		}
		inTerms := matcher(ts)
		for _, s := range out {
			if !inTerms(s.GetSegments()) {
				t.Fatalf("segment %s not admitted by %s", fmtLabels(s.GetSegments()), fmtTerms(ts))
			}
		}
		if n, got, ok := disagreement(universe(), segmentsMatcher(out), inTerms); len(ts) > 0 && ok {
			t.Fatalf("node %s: in a segment %v, matches %v", fmtLabels(n), got, !got)
		}
	})
}

// naiveExpansionCount is Expand's documented counting rule: the sum of
// each distinct term's product of distinct values, before overlapping
// segments are merged.
func naiveExpansionCount(t *testing.T, ts []v1.TopologySelectorTerm) int {
	t.Helper()
	norm, err := Normalize(ts)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, tm := range norm {
		p := 1
		for _, e := range tm.MatchLabelExpressions {
			p *= len(e.Values) // at most 255^3 per term: no overflow
		}
		total += p
	}
	return total
}
