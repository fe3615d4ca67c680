package chaos

import (
	"slices"
	"testing"
)

// Every round kills each victim exactly once, no component is killed
// twice in a row, and a seed always gives the same order while another
// seed gives another.
func TestSchedule(t *testing.T) {
	const rounds = 200
	order := func(seed uint64) []string {
		s := NewSchedule(Victims, seed)
		var out []string
		for range rounds * len(Victims) {
			out = append(out, s.Next())
		}
		return out
	}
	got := order(1)
	for r := range rounds {
		round := slices.Clone(got[r*len(Victims) : (r+1)*len(Victims)])
		slices.Sort(round)
		want := slices.Sorted(slices.Values(Victims))
		if !slices.Equal(round, want) {
			t.Fatalf("round %d kills %v, want each of %v once", r, round, want)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Fatalf("kill %d and %d are both %s: it would be killed before it served again", i-1, i, got[i])
		}
	}
	if !slices.Equal(order(1), got) {
		t.Fatal("the same seed gave another order: a run could not be repeated")
	}
	if slices.Equal(order(2), got) {
		t.Fatal("seeds 1 and 2 gave the same order: the seed does nothing")
	}
	firsts := map[string]int{}
	for r := range rounds {
		firsts[got[r*len(Victims)]]++
	}
	if len(firsts) != len(Victims) {
		t.Fatalf("only %d of %d victims ever open a round: %v", len(firsts), len(Victims), firsts)
	}
}

func TestScheduleOfOne(t *testing.T) {
	s := NewSchedule([]string{"etcd"}, 7)
	for range 3 {
		if got := s.Next(); got != "etcd" {
			t.Fatalf("Next = %q", got)
		}
	}
}
