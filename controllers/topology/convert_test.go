package topology

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestFromCSI(t *testing.T) {
	tests := []struct {
		name    string
		in      []*csi.Topology
		want    []v1.TopologySelectorTerm
		wantErr error
		errText string
	}{
		{name: "nil is no constraint", in: nil, want: nil},
		{name: "empty is no constraint", in: segs(), want: nil},
		{
			name: "one segment, keys sorted",
			in:   segs(seg(zk, "a", rk, "r1")),
			want: terms(term(expr(rk, "r1"), expr(zk, "a"))),
		},
		{
			name: "two segments stay two terms",
			in:   segs(seg(rk, "r1", zk, "a"), seg(rk, "r2", zk, "b")),
			want: terms(term(expr(rk, "r1"), expr(zk, "a")), term(expr(rk, "r2"), expr(zk, "b"))),
		},
		{
			name: "segment order kept, duplicates dropped",
			in:   segs(seg(zk, "b"), seg(zk, "a"), seg(zk, "b")),
			want: terms(term(expr(zk, "b")), term(expr(zk, "a"))),
		},
		{
			name: "segments with different key sets",
			in:   segs(seg(rk, "r1"), seg(rk, "r2", zk, "b")),
			want: terms(term(expr(rk, "r1")), term(expr(rk, "r2"), expr(zk, "b"))),
		},
		{name: "nil segment", in: segs(seg(zk, "a"), nil), wantErr: ErrInvalidSegment, errText: "segments[1]: must have at least one key"},
		{name: "empty segment", in: segs(seg()), wantErr: ErrInvalidSegment, errText: "segments[0]: must have at least one key"},
		{name: "invalid key", in: segs(seg("Bad Key", "a")), wantErr: ErrInvalidSegment, errText: `segments[0] key "Bad Key"`},
		{name: "empty value", in: segs(seg(zk, "a"), seg(zk, "")), wantErr: ErrInvalidSegment, errText: `segments[1] key "topology.kubernetes.io/zone" value "": must not be empty`},
		{name: "invalid value", in: segs(seg(zk, "-a")), wantErr: ErrInvalidSegment, errText: `value "-a"`},
		{name: "too many segments", in: manyZoneSegments(MaxSegments + 1), wantErr: ErrTooManySegments, errText: "1025 segments, limit 1024"},
		{name: "MaxKeysPerTerm keys", in: segs(manyKeySegment(MaxKeysPerTerm)), want: terms(manyKeyTerm(MaxKeysPerTerm))},
		{name: "too many keys", in: segs(seg(zk, "a"), manyKeySegment(MaxKeysPerTerm+1)), wantErr: ErrInvalidSegment, errText: "segments[1]: 9 keys, limit 8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromCSI(tc.in)
			if !errors.Is(err, tc.wantErr) || (err != nil && !strings.Contains(err.Error(), tc.errText)) {
				t.Fatalf("FromCSI error = %v, want %v containing %q", err, tc.wantErr, tc.errText)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("FromCSI = %s, want %s (-want +got):\n%s", fmtTerms(got), fmtTerms(tc.want), diff)
			}
		})
	}
}

func manyZoneSegments(n int) []*csi.Topology {
	out := make([]*csi.Topology, n)
	for i := range out {
		out[i] = seg(zk, "z"+strconv.Itoa(i))
	}
	return out
}

func manyValues(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "z" + strconv.Itoa(i)
	}
	return out
}

func TestFromCSIMaxSegmentsAccepted(t *testing.T) {
	got, err := FromCSI(manyZoneSegments(MaxSegments))
	if err != nil || len(got) != MaxSegments {
		t.Fatalf("FromCSI(%d segments) = %d terms, %v; want %d terms", MaxSegments, len(got), err, MaxSegments)
	}
}

// TestNotFolded is the design's central case: a snapshot accessible from
// {r1,a} and {r2,b} must not become accessible from {r2,a} or {r1,b}.
func TestNotFolded(t *testing.T) {
	snapshot := segs(seg(rk, "r1", zk, "a"), seg(rk, "r2", zk, "b"))
	got, err := FromCSI(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Expand(got)
	if err != nil {
		t.Fatal(err)
	}
	if fmtSegs(back) != fmtSegs(snapshot) {
		t.Fatalf("round trip = %s, want %s", fmtSegs(back), fmtSegs(snapshot))
	}
	nodes := []struct {
		labels map[string]string
		want   bool
	}{
		{node(rk, "r1", zk, "a"), true},
		{node(rk, "r2", zk, "b"), true},
		{node(rk, "r2", zk, "a"), false},
		{node(rk, "r1", zk, "b"), false},
		{node(zk, "a"), false},
	}
	for _, n := range nodes {
		if matches(got, n.labels) != n.want {
			t.Errorf("matches(%s, %s) = %v, want %v", fmtTerms(got), fmtLabels(n.labels), !n.want, n.want)
		}
	}
	// The folded form the upstream PR produces does admit {r2,a}; this
	// guards the check above against a matcher that rejects everything.
	folded := terms(term(expr(rk, "r1", "r2"), expr(zk, "a", "b")))
	if !matches(folded, node(rk, "r2", zk, "a")) {
		t.Fatal("folded term should admit {r2,a}: matches is broken")
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name string
		in   []v1.TopologySelectorTerm
		want []*csi.Topology
	}{
		{name: "nil", in: nil, want: nil},
		{name: "empty", in: terms(), want: nil},
		{
			name: "region r1, zones a and b",
			in:   terms(term(expr(rk, "r1"), expr(zk, "a", "b"))),
			want: segs(seg(rk, "r1", zk, "a"), seg(rk, "r1", zk, "b")),
		},
		{
			name: "keys and values sorted, duplicate values dropped",
			in:   terms(term(expr(zk, "b", "a", "b"), expr(rk, "r1"))),
			want: segs(seg(rk, "r1", zk, "a"), seg(rk, "r1", zk, "b")),
		},
		{
			name: "full product, last key fastest",
			in:   terms(term(expr(rk, "r1", "r2"), expr(zk, "a", "b"))),
			want: segs(seg(rk, "r1", zk, "a"), seg(rk, "r1", zk, "b"), seg(rk, "r2", zk, "a"), seg(rk, "r2", zk, "b")),
		},
		{
			name: "three keys",
			in:   terms(term(expr(rk, "r1"), expr(zk, "a"), expr(kk, "x", "y"))),
			want: segs(seg(rk, "r1", zk, "a", kk, "x"), seg(rk, "r1", zk, "a", kk, "y")),
		},
		{
			name: "terms in order, overlapping segments once",
			in:   terms(term(expr(zk, "c")), term(expr(zk, "a", "c")), term(expr(zk, "c"))),
			want: segs(seg(zk, "c"), seg(zk, "a")),
		},
		{
			name: "region-only term next to a zone term",
			in:   terms(term(expr(rk, "r1")), term(expr(rk, "r2"), expr(zk, "b"))),
			want: segs(seg(rk, "r1"), seg(rk, "r2", zk, "b")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expand(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if fmtSegs(got) != fmtSegs(tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("Expand = %s, want %s", fmtSegs(got), fmtSegs(tc.want))
			}
		})
	}
}

func TestExpandBound(t *testing.T) {
	tests := []struct {
		name    string
		in      []v1.TopologySelectorTerm
		wantLen int
		errText string
	}{
		{name: "exactly MaxSegments", in: terms(term(expr(zk, manyValues(MaxSegments)...))), wantLen: MaxSegments},
		{name: "one term over", in: terms(term(expr(zk, manyValues(MaxSegments+1)...))), errText: "limit reached at terms[0], which alone expands to more than 1024"},
		{name: "sum over", in: terms(term(expr(zk, manyValues(512)...)), term(expr(rk, manyValues(513)...))), errText: "limit reached at terms[1], which alone expands to 513"},
		{name: "product over", in: terms(term(expr(rk, manyValues(33)...), expr(zk, manyValues(32)...))), errText: "more than 1024 segments"},
		{name: "huge product does not overflow", in: terms(term(expr(rk, manyValues(1000)...), expr(zk, manyValues(1000)...), expr(kk, manyValues(1000)...), expr("k4", manyValues(1000)...))), errText: "more than 1024"},
		// 256^8 = 2^64 wraps to 0 in an int: without the cap this would expand to nothing.
		{name: "product beyond int64 is capped, not wrapped", in: terms(wideKeys(MaxKeysPerTerm, 256)), errText: "which alone expands to more than 1024"},
		// Identical terms are merged before counting, overlapping products after.
		{name: "identical terms counted once", in: repeatTerm(term(expr(zk, manyValues(600)...)), 2), wantLen: 600},
		{name: "overlapping terms counted twice", in: terms(term(expr(zk, manyValues(600)...)), term(expr(zk, manyValues(601)...))), errText: "limit reached at terms[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Expand(tc.in)
			if tc.errText == "" {
				if err != nil || len(got) != tc.wantLen {
					t.Fatalf("Expand = %d segments, %v; want %d", len(got), err, tc.wantLen)
				}
				return
			}
			if !errors.Is(err, ErrTooManySegments) || !strings.Contains(err.Error(), tc.errText) {
				t.Fatalf("Expand error = %v, want ErrTooManySegments containing %q", err, tc.errText)
			}
			if got != nil {
				t.Fatalf("Expand returned %d segments with an error", len(got))
			}
		})
	}
}

// wideKeys is one term with n keys of v values each: v^n segments.
func wideKeys(n, v int) v1.TopologySelectorTerm {
	var t v1.TopologySelectorTerm
	for i := range n {
		t.MatchLabelExpressions = append(t.MatchLabelExpressions, expr("k"+strconv.Itoa(i), manyValues(v)...))
	}
	return t
}

func repeatTerm(t v1.TopologySelectorTerm, n int) []v1.TopologySelectorTerm {
	out := make([]v1.TopologySelectorTerm, n)
	for i := range out {
		out[i] = t
	}
	return out
}

// malformedCases are shared by the tests of every function that
// validates terms.
var malformedCases = []struct {
	name    string
	in      []v1.TopologySelectorTerm
	errText string
}{
	{"empty term", terms(term(expr(zk, "a")), term()), "terms[1].matchLabelExpressions: must not be empty"},
	{"empty values", terms(term(expr(rk, "r1"), expr(zk))), `terms[0].matchLabelExpressions[1].values: must not be empty (key "topology.kubernetes.io/zone")`},
	{"duplicate key", terms(term(expr(zk, "a"), expr(rk, "r1"), expr(zk, "b"))), `terms[0].matchLabelExpressions[2].key "topology.kubernetes.io/zone": duplicate of matchLabelExpressions[0]`},
	{"invalid key", terms(term(expr(zk, "a")), term(expr("Bad Key", "a"))), `terms[1].matchLabelExpressions[0].key "Bad Key"`},
	{"empty key", terms(term(expr("", "a"))), `terms[0].matchLabelExpressions[0].key ""`},
	{"key with two slashes", terms(term(expr("a/b/c", "a"))), `terms[0].matchLabelExpressions[0].key "a/b/c"`},
	{"invalid value", terms(term(expr(zk, "a", "-b"))), `terms[0].matchLabelExpressions[0].values[1] "-b"`},
	{"empty value", terms(term(expr(zk, ""))), `terms[0].matchLabelExpressions[0].values[0] "": must not be empty`},
	{"value too long", terms(term(expr(zk, strings.Repeat("x", 64)))), "values[0]"},
	{"too many keys", terms(term(expr(zk, "a")), manyKeyTerm(MaxKeysPerTerm+1)), "terms[1].matchLabelExpressions: 9 expressions, limit 8"},
}

// manyKeySegment is a segment with n keys k0..k(n-1), each of value v.
func manyKeySegment(n int) *csi.Topology {
	s := &csi.Topology{Segments: map[string]string{}}
	for i := range n {
		s.Segments[fmt.Sprint("example.com/k", i)] = "v"
	}
	return s
}

// manyKeyTerm is the term of manyKeySegment(n), keys sorted.
func manyKeyTerm(n int) v1.TopologySelectorTerm {
	var t v1.TopologySelectorTerm
	for _, k := range slices.Sorted(maps.Keys(manyKeySegment(n).Segments)) {
		t.MatchLabelExpressions = append(t.MatchLabelExpressions, expr(k, "v"))
	}
	return t
}

func TestMalformed(t *testing.T) {
	funcs := map[string]func([]v1.TopologySelectorTerm) error{
		"Validate":    Validate,
		"Normalize":   func(ts []v1.TopologySelectorTerm) error { _, err := Normalize(ts); return err },
		"Expand":      func(ts []v1.TopologySelectorTerm) error { _, err := Expand(ts); return err },
		"Requirement": func(ts []v1.TopologySelectorTerm) error { _, err := Requirement(ts, "pvc"); return err },
	}
	for _, tc := range malformedCases {
		for fname, f := range funcs {
			t.Run(fname+"/"+tc.name, func(t *testing.T) {
				err := f(tc.in)
				if !errors.Is(err, ErrInvalidTerm) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error = %v, want ErrInvalidTerm containing %q", err, tc.errText)
				}
			})
		}
	}
}

func TestNormalize(t *testing.T) {
	in := terms(
		term(expr(zk, "b", "a", "b"), expr(rk, "r1")),
		term(expr(rk, "r1"), expr(zk, "a", "b")), // same set as the first
		term(expr(zk, "c")),
	)
	before := fmtTerms(in)
	got, err := Normalize(in)
	if err != nil {
		t.Fatal(err)
	}
	want := terms(term(expr(rk, "r1"), expr(zk, "a", "b")), term(expr(zk, "c")))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Normalize = %s, want %s (-want +got):\n%s", fmtTerms(got), fmtTerms(want), diff)
	}
	if fmtTerms(in) != before {
		t.Fatalf("Normalize modified its input: %s, was %s", fmtTerms(in), before)
	}
	got[0].MatchLabelExpressions[1].Values[0] = "mutated"
	if fmtTerms(in) != before {
		t.Fatal("Normalize result aliases its input")
	}
}

func TestRequirement(t *testing.T) {
	zones := terms(term(expr(rk, "r1"), expr(zk, "a", "b", "c")))
	requisite := segs(seg(rk, "r1", zk, "a"), seg(rk, "r1", zk, "b"), seg(rk, "r1", zk, "c"))

	t.Run("no terms, no requirement", func(t *testing.T) {
		for _, in := range [][]v1.TopologySelectorTerm{nil, {}} {
			if req, err := Requirement(in, "pvc-1"); req != nil || err != nil {
				t.Fatalf("Requirement(%v) = %v, %v; want nil, nil", in, req, err)
			}
		}
	})
	t.Run("no spread key, preferred in requisite order", func(t *testing.T) {
		req, err := Requirement(zones, "")
		if err != nil {
			t.Fatal(err)
		}
		if fmtSegs(req.Requisite) != fmtSegs(requisite) || fmtSegs(req.Preferred) != fmtSegs(requisite) {
			t.Fatalf("got requisite %s preferred %s, want both %s", fmtSegs(req.Requisite), fmtSegs(req.Preferred), fmtSegs(requisite))
		}
	})
	t.Run("spread key rotates preferred", func(t *testing.T) {
		starts := map[string]bool{}
		for i := range 30 {
			key := "pvc-" + strconv.Itoa(i)
			req, err := Requirement(zones, key)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Requirement(zones, key)
			if fmtSegs(req.Preferred) != fmtSegs(again.Preferred) {
				t.Fatalf("key %q: preferred not deterministic", key)
			}
			if fmtSegs(req.Requisite) != fmtSegs(requisite) {
				t.Fatalf("key %q: requisite %s, want %s", key, fmtSegs(req.Requisite), fmtSegs(requisite))
			}
			shift := spreadOffset(key, len(requisite))
			want := append(append([]*csi.Topology{}, requisite[shift:]...), requisite[:shift]...)
			if fmtSegs(req.Preferred) != fmtSegs(want) {
				t.Fatalf("key %q: preferred %s, want %s", key, fmtSegs(req.Preferred), fmtSegs(want))
			}
			starts[req.Preferred[0].Segments[zk]] = true
		}
		if len(starts) != 3 {
			t.Fatalf("30 claims started preferred in zones %v; want all 3 used", starts)
		}
	})
	t.Run("preferred does not alias requisite", func(t *testing.T) {
		req, err := Requirement(zones, "")
		if err != nil {
			t.Fatal(err)
		}
		req.Preferred[0].Segments[zk] = "mutated"
		if req.Requisite[0].Segments[zk] != "a" {
			t.Fatal("changing preferred changed requisite")
		}
	})
	t.Run("bound", func(t *testing.T) {
		_, err := Requirement(terms(term(expr(zk, manyValues(MaxSegments+1)...))), "")
		if !errors.Is(err, ErrTooManySegments) {
			t.Fatalf("error = %v, want ErrTooManySegments", err)
		}
	})
}
