package topology

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestIntersect(t *testing.T) {
	snapR1aR2b := terms(term(expr(rk, "r1"), expr(zk, "a")), term(expr(rk, "r2"), expr(zk, "b")))
	tests := []struct {
		name   string
		sc     []v1.TopologySelectorTerm // StorageClass.allowedTopologies
		snap   []v1.TopologySelectorTerm // VolumeSnapshotContent.spec.nodeAffinity
		want   []v1.TopologySelectorTerm
		wantOK bool
	}{
		{name: "both nil: no constraint", want: nil, wantOK: true},
		{name: "both empty: no constraint", sc: terms(), snap: terms(), want: nil, wantOK: true},
		{
			name: "no snapshot topology: StorageClass alone, normalized",
			sc:   terms(term(expr(zk, "b", "a"))),
			want: terms(term(expr(zk, "a", "b"))), wantOK: true,
		},
		{
			name: "no StorageClass topology: snapshot alone",
			snap: snapR1aR2b,
			want: snapR1aR2b, wantOK: true,
		},
		{
			name: "StorageClass zone a and snapshot region r1 combine",
			sc:   terms(term(expr(zk, "a"))),
			snap: terms(term(expr(rk, "r1"))),
			want: terms(term(expr(rk, "r1"), expr(zk, "a"))), wantOK: true,
		},
		{
			name: "zone a against zone b: constrained to nothing",
			sc:   terms(term(expr(zk, "a"))),
			snap: terms(term(expr(zk, "b"))),
			want: nil, wantOK: false,
		},
		{
			name: "region r2 against snapshot {r1,a}: nothing",
			sc:   terms(term(expr(rk, "r2"))),
			snap: terms(term(expr(rk, "r1"), expr(zk, "a"))),
			want: nil, wantOK: false,
		},
		{
			name: "multi-segment snapshot against region r2 keeps {r2,b} only",
			sc:   terms(term(expr(rk, "r2"))),
			snap: snapR1aR2b,
			want: terms(term(expr(rk, "r2"), expr(zk, "b"))), wantOK: true,
		},
		{
			name: "zones a, b, c against multi-segment snapshot",
			sc:   terms(term(expr(zk, "c", "a", "b"))),
			snap: snapR1aR2b,
			want: snapR1aR2b, wantOK: true,
		},
		{
			name: "value sets intersect per key",
			sc:   terms(term(expr(rk, "r1"), expr(zk, "a", "b", "c"))),
			snap: terms(term(expr(zk, "b", "c", "d"))),
			want: terms(term(expr(rk, "r1"), expr(zk, "b", "c"))), wantOK: true,
		},
		{
			name: "duplicate merges dropped",
			sc:   terms(term(expr(zk, "a")), term(expr(zk, "a", "b"))),
			snap: terms(term(expr(zk, "a"))),
			want: terms(term(expr(zk, "a"))), wantOK: true,
		},
		{
			name: "order: first side's terms outer",
			sc:   terms(term(expr(zk, "b")), term(expr(zk, "a"))),
			snap: terms(term(expr(rk, "r1")), term(expr(rk, "r2"))),
			want: terms(
				term(expr(rk, "r1"), expr(zk, "b")), term(expr(rk, "r2"), expr(zk, "b")),
				term(expr(rk, "r1"), expr(zk, "a")), term(expr(rk, "r2"), expr(zk, "a")),
			),
			wantOK: true,
		},
		{
			name: "rack term narrows a zone segment",
			sc:   terms(term(expr(kk, "x"))),
			snap: terms(term(expr(rk, "r1"), expr(zk, "a"))),
			want: terms(term(expr(rk, "r1"), expr(zk, "a"), expr(kk, "x"))), wantOK: true, // keys sorted
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Intersect(tc.sc, tc.snap)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); ok != tc.wantOK || diff != "" {
				t.Fatalf("Intersect = %s, ok=%v; want %s, ok=%v (-want +got):\n%s", fmtTerms(got), ok, fmtTerms(tc.want), tc.wantOK, diff)
			}
			checkIntersection(t, tc.sc, tc.snap)
		})
	}
}

// TestIntersectEmptyIsNotUnconstrained pins the distinction the
// provisioner relies on: an impossible combination must not read as
// "provision anywhere".
func TestIntersectEmptyIsNotUnconstrained(t *testing.T) {
	got, ok, err := Intersect(terms(term(expr(zk, "a"))), terms(term(expr(zk, "b"))))
	if err != nil || ok {
		t.Fatalf("Intersect = %s, ok=%v, err=%v; want ok=false", fmtTerms(got), ok, err)
	}
	for _, n := range universe() {
		if resultMatcher(got, ok)(n) {
			t.Fatalf("empty intersection admits %s", fmtLabels(n))
		}
	}
	req, err := Requirement(got, "")
	if req != nil || err != nil {
		t.Fatalf("Requirement of an empty result = %v, %v", req, err)
	}
	// The caller must look at ok: the terms alone are the same as "no
	// constraint", which is why Intersect returns ok at all.
	none, okNone, _ := Intersect(nil, nil)
	if !okNone || !cmp.Equal(none, got) {
		t.Fatalf("Intersect(nil, nil) = %s, ok=%v", fmtTerms(none), okNone)
	}
}

func TestIntersectMalformed(t *testing.T) {
	valid := terms(term(expr(zk, "a")))
	for _, tc := range malformedCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, side := range []string{"first", "second"} {
				a, b := tc.in, valid
				if side == "second" {
					a, b = b, a
				}
				got, ok, err := Intersect(a, b)
				if !errors.Is(err, ErrInvalidTerm) || !strings.Contains(err.Error(), side+" terms: ") || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("%s side: error = %v, want ErrInvalidTerm naming %q and %q", side, err, side, tc.errText)
				}
				if got != nil || ok {
					t.Fatalf("%s side: result %s ok=%v alongside an error", side, fmtTerms(got), ok)
				}
			}
		})
	}
}

func TestIntersectBound(t *testing.T) {
	zones := func(n int) []v1.TopologySelectorTerm { return terms(term(expr(zk, manyValues(n)...))) }
	manyTerms := func(n int) []v1.TopologySelectorTerm {
		out := make([]v1.TopologySelectorTerm, n)
		for i, v := range manyValues(n) {
			out[i] = term(expr(zk, v))
		}
		return out
	}
	tests := []struct {
		name    string
		a, b    []v1.TopologySelectorTerm
		wantLen int // segments of the result
		errText string
	}{
		{name: "result at the bound", a: zones(MaxSegments), b: terms(term(expr(rk, "r1"))), wantLen: MaxSegments},
		{name: "result over the bound", a: zones(MaxSegments), b: terms(term(expr(rk, "r1", "r2"))), errText: "intersection: too many topology segments"},
		{name: "merge count over the bound", a: manyTerms(MaxSegments), b: terms(term(expr(rk, "r1")), term(expr(rk, "r2"))), errText: "limit reached merging first terms[512] with second terms[0]"},
		{name: "identity over the bound", a: zones(MaxSegments + 1), b: nil, errText: "intersection: too many topology segments"},
		{name: "first side too long", a: manyTerms(MaxSegments + 1), b: zones(1), errText: "first terms: too many topology segments: 1025 terms"},
		{name: "second side too long", a: zones(1), b: manyTerms(MaxSegments + 1), errText: "second terms: too many topology segments: 1025 terms"},
		{name: "large sides, small result", a: manyTerms(MaxSegments), b: manyTerms(MaxSegments), wantLen: MaxSegments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Intersect(tc.a, tc.b)
			if tc.errText != "" {
				if !errors.Is(err, ErrTooManySegments) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error = %v, want ErrTooManySegments containing %q", err, tc.errText)
				}
				return
			}
			if err != nil || !ok {
				t.Fatalf("Intersect: ok=%v err=%v", ok, err)
			}
			segs, err := Expand(got)
			if err != nil || len(segs) != tc.wantLen {
				t.Fatalf("Expand(result) = %d segments, %v; want %d", len(segs), err, tc.wantLen)
			}
		})
	}
}

func TestIntersectDoesNotTouchInputs(t *testing.T) {
	a := terms(term(expr(zk, "b", "a")), term(expr(rk, "r1")))
	b := terms(term(expr(rk, "r1"), expr(zk, "a")))
	wantA, wantB := fmtTerms(a), fmtTerms(b)
	for _, pair := range [][2][]v1.TopologySelectorTerm{{a, b}, {a, nil}, {nil, b}} {
		got, _, err := Intersect(pair[0], pair[1])
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			for j := range got[i].MatchLabelExpressions {
				got[i].MatchLabelExpressions[j].Values[0] = "mutated"
			}
		}
		if fmtTerms(a) != wantA || fmtTerms(b) != wantB {
			t.Fatalf("inputs changed: a=%s b=%s", fmtTerms(a), fmtTerms(b))
		}
	}
}
