package state

import (
	"errors"
	"testing"
)

// TestGroups: a group and its members are written in one Update, survive
// a restart, are found by the group's name and not by a member name, and
// go together.
func TestGroups(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	g := &Group{ID: "g1", Name: "group", SourceVolumes: []string{"v1", "v2"}, Snapshots: []string{"s1", "s2"}, Created: created}
	m1, m2 := snap("s1", "", "v1", "r1/a"), snap("s2", "", "v2", "r1/b")
	m1.Group, m2.Group = "g1", "g1"
	mustUpdate(t, s, func(tx *Tx) {
		tx.PutSnapshot(m1)
		tx.PutSnapshot(m2)
		tx.PutGroup(g)
	})
	s = reopen(t, s, dir)
	if got := s.GroupByName("group"); !equal(got, g) {
		t.Fatalf("GroupByName after restart = %+v, want %+v", got, g)
	}
	if got := s.Snapshot("s2"); !equal(got, m2) {
		t.Fatalf("member after restart = %+v, want %+v", got, m2)
	}
	if got := s.SnapshotByName(""); got != nil {
		t.Errorf("SnapshotByName(\"\") = %+v: a member has no name to be found by", got)
	}
	mustUpdate(t, s, func(tx *Tx) {
		tx.DeleteGroup("g1")
		tx.DeleteSnapshot("s1")
		tx.DeleteSnapshot("s2")
	})
	s = reopen(t, s, dir)
	if s.Group("g1") != nil || s.GroupByName("group") != nil || s.Snapshot("s1") != nil {
		t.Errorf("group or member left after deleting them")
	}
	if u := s.ZoneUsage("r1/a"); u.Snapshots != 0 {
		t.Errorf("zone r1/a holds %d snapshots after the group went, want 0", u.Snapshots)
	}
}

// TestTxUsageCountsStagedSnapshots: within one Update, Usage counts the
// snapshot copies already put, so several members placed together are
// each checked against the quota; a failed Update counts nothing.
func TestTxUsageCountsStagedSnapshots(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustUpdate(t, s, func(tx *Tx) { tx.PutSnapshot(snap("old", "old", "v0", "r1/a")) })
	errRefused := errors.New("refused")
	err := s.Update(func(tx *Tx) error {
		for i, want := range []int64{1, 2, 3} {
			if got := tx.Usage("r1/a").Snapshots; got != want {
				t.Errorf("before member %d: Usage(r1/a).Snapshots = %d, want %d", i, got, want)
			}
			tx.PutSnapshot(snap("m"+string(rune('0'+i)), "", "v1", "r1/a"))
		}
		// Replacing a live snapshot adds no copy.
		tx.PutSnapshot(snap("old", "old", "v0", "r1/a"))
		if got := tx.Usage("r1/a").Snapshots; got != 4 {
			t.Errorf("after replacing a live snapshot: Usage = %d, want 4", got)
		}
		return errRefused
	})
	if !errors.Is(err, errRefused) {
		t.Fatalf("Update = %v, want %v", err, errRefused)
	}
	if got := s.ZoneUsage("r1/a").Snapshots; got != 1 {
		t.Errorf("after the failed Update: %d snapshots in r1/a, want 1", got)
	}
}
