package state

import "testing"

// TestTableVisibleWalksVersions drives one key through versions committed
// in steps and checks what a reader sees at each durable sequence: the
// newest version that is durable, never an older one (an acknowledged
// write read back stale) and never nothing while a version is durable.
func TestTableVisibleWalksVersions(t *testing.T) {
	type step struct {
		put     int64 // capacity of a new version; 0 deletes
		seq     uint64
		durable uint64 // commit (reap) up to here after the step; 0: none
		want    int64  // capacity readers see at durable; -1: nothing
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"A durable while B commits", []step{
			{put: 10, seq: 1, durable: 1, want: 10},
			{put: 20, seq: 2},
			{put: 30, seq: 3, durable: 2, want: 20},
			{durable: 3, want: 30},
		}},
		{"two replacements in one commit", []step{
			{put: 10, seq: 1, durable: 1, want: 10},
			{put: 20, seq: 2},
			{put: 30, seq: 2, durable: 1, want: 10},
			{durable: 2, want: 30},
		}},
		{"delete then recreate while the delete commits", []step{
			{put: 10, seq: 1, durable: 1, want: 10},
			{put: 0, seq: 2},
			{put: 20, seq: 3, durable: 1, want: 10},
			{durable: 2, want: -1},
			{durable: 3, want: 20},
		}},
		{"delete durable", []step{
			{put: 10, seq: 1, durable: 1, want: 10},
			{put: 0, seq: 2, durable: 2, want: -1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := newTable("volumes", func(v *Volume) string { return v.ID }, func(v *Volume) *visibility { return &v.vis })
			for i, s := range tt.steps {
				switch {
				case s.put > 0:
					tab.put(&Volume{ID: "v", CapacityBytes: s.put}, s.seq)
				case s.seq > 0:
					tab.delete("v", s.seq)
				}
				if s.durable == 0 {
					continue
				}
				tab.reap(s.durable)
				got := int64(-1)
				if r := tab.visible("v", s.durable); r != nil {
					got = r.CapacityBytes
				}
				if got != s.want {
					t.Fatalf("step %d: reader at durable %d sees %d, want %d", i, s.durable, got, s.want)
				}
			}
		})
	}
}
