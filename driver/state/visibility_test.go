package state

import (
	"testing"
	"time"
)

// holdCommits takes bbolt's writer lock so that the store's commit loop
// cannot commit until the returned release function is called.
func holdCommits(t *testing.T, s *Store) (release func()) {
	t.Helper()
	btx, err := s.db.Begin(true)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	released := false
	release = func() {
		if !released {
			released = true
			btx.Rollback()
		}
	}
	t.Cleanup(release)
	return release
}

// waitWriter polls the writer's view until cond holds.
func waitWriter(t *testing.T, s *Store, what string, cond func(tx *Tx) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok := false
		s.View(func(tx *Tx) { ok = cond(tx) })
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s in the writer's view", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func asyncUpdate(s *Store, fn func(tx *Tx)) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.Update(func(tx *Tx) error { fn(tx); return nil }) }()
	return done
}

func TestReadersSeeOnlyDurableCreates(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustUpdate(t, s, func(tx *Tx) {
		tx.PutVolume(vol("vol-1", "n1", "z", 10))
		tx.PutSnapshot(snap("snap-1", "sn1", "vol-1", "z"))
	})

	release := holdCommits(t, s)
	done := asyncUpdate(s, func(tx *Tx) {
		tx.PutVolume(vol("vol-2", "n2", "z", 20))
		tx.PutSnapshot(snap("snap-2", "sn2", "vol-1", "z"))
		tx.PutPublication(&Publication{VolumeID: "vol-1", NodeID: "node"})
	})
	waitWriter(t, s, "vol-2", func(tx *Tx) bool { return tx.Volume("vol-2") != nil })

	// The commit is blocked: Update has not returned.
	select {
	case err := <-done:
		t.Fatalf("Update returned (%v) before its commit", err)
	case <-time.After(50 * time.Millisecond):
	}

	// Readers do not see the pending records...
	if v := s.Volume("vol-2"); v != nil {
		t.Errorf("Store.Volume(vol-2) = %+v before its commit", v)
	}
	if v := s.VolumeByName("n2"); v != nil {
		t.Errorf("Store.VolumeByName(n2) = %+v before its commit", v)
	}
	if got := volumeIDs(mustList(s)); !equal(got, []string{"vol-1"}) {
		t.Errorf("ListVolumes = %v before the commit, want [vol-1]", got)
	}
	if v := s.Snapshot("snap-2"); v != nil {
		t.Errorf("Store.Snapshot(snap-2) = %+v before its commit", v)
	}
	if v := s.SnapshotByName("sn2"); v != nil {
		t.Errorf("Store.SnapshotByName(sn2) = %+v before its commit", v)
	}
	if got, _ := s.ListSnapshots("", 0, "vol-1"); !equal(snapshotIDs(got), []string{"snap-1"}) {
		t.Errorf("ListSnapshots(vol-1) = %v before the commit, want [snap-1]", snapshotIDs(got))
	}
	if got := s.PublishedNodes("vol-1"); len(got) != 0 {
		t.Errorf("PublishedNodes(vol-1) = %v before the commit", got)
	}
	// ...while the writer's view and the usage counters do.
	if got := s.ZoneUsage("z"); got != (Usage{Bytes: 30, Snapshots: 2}) {
		t.Errorf("ZoneUsage(z) = %+v while committing, want {30 2}", got)
	}
	s.View(func(tx *Tx) {
		if tx.VolumeByName("n2") == nil || tx.SnapshotByName("sn2") == nil || tx.Publication("vol-1", "node") == nil {
			t.Errorf("writer's view misses a pending record")
		}
		if tx.PublishedVolumes("node") != 1 {
			t.Errorf("PublishedVolumes(node) = %d while committing, want 1", tx.PublishedVolumes("node"))
		}
	})

	release()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Update did not return after the commit was released")
	}
	if v := s.Volume("vol-2"); v == nil || v.CapacityBytes != 20 {
		t.Errorf("Store.Volume(vol-2) after Update = %+v", v)
	}
	if v := s.VolumeByName("n2"); v == nil || v.ID != "vol-2" {
		t.Errorf("Store.VolumeByName(n2) after Update = %+v", v)
	}
	if got := volumeIDs(mustList(s)); !equal(got, []string{"vol-1", "vol-2"}) {
		t.Errorf("ListVolumes after Update = %v", got)
	}
	if got, _ := s.ListSnapshots("", 0, "vol-1"); !equal(snapshotIDs(got), []string{"snap-1", "snap-2"}) {
		t.Errorf("ListSnapshots(vol-1) after Update = %v", snapshotIDs(got))
	}
	if got := s.PublishedNodes("vol-1"); !equal(got, []string{"node"}) {
		t.Errorf("PublishedNodes(vol-1) after Update = %v", got)
	}
}

func TestReadersSeeDeletesOnlyWhenDurable(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustUpdate(t, s, func(tx *Tx) {
		tx.PutVolume(vol("vol-1", "n1", "z", 10))
		tx.PutVolume(vol("vol-2", "n2", "z", 20))
		tx.PutSnapshot(snap("snap-1", "sn1", "vol-1", "z"))
	})

	release := holdCommits(t, s)
	done := asyncUpdate(s, func(tx *Tx) {
		tx.DeleteVolume("vol-2")
		tx.DeleteSnapshot("snap-1")
	})
	waitWriter(t, s, "deletion of vol-2", func(tx *Tx) bool { return tx.Volume("vol-2") == nil })

	// A deletion not yet durable is not yet seen by ID lookups and listings:
	// the record would come back after a crash.
	if v := s.Volume("vol-2"); v == nil || v.CapacityBytes != 20 {
		t.Errorf("Store.Volume(vol-2) = %+v while its deletion commits, want the durable record", v)
	}
	if got := volumeIDs(mustList(s)); !equal(got, []string{"vol-1", "vol-2"}) {
		t.Errorf("ListVolumes = %v while vol-2's deletion commits", got)
	}
	if v := s.Snapshot("snap-1"); v == nil {
		t.Errorf("Store.Snapshot(snap-1) = nil while its deletion commits")
	}
	if got, _ := s.ListSnapshots("", 0, ""); !equal(snapshotIDs(got), []string{"snap-1"}) {
		t.Errorf("ListSnapshots = %v while snap-1's deletion commits", snapshotIDs(got))
	}
	// The writer already counts the deletion.
	if got := s.ZoneUsage("z"); got != (Usage{Bytes: 10}) {
		t.Errorf("ZoneUsage(z) = %+v while committing, want {10 0}", got)
	}

	release()
	if err := <-done; err != nil {
		t.Fatalf("Update: %v", err)
	}
	if v := s.Volume("vol-2"); v != nil {
		t.Errorf("Store.Volume(vol-2) after the delete = %+v", v)
	}
	if got := volumeIDs(mustList(s)); !equal(got, []string{"vol-1"}) {
		t.Errorf("ListVolumes after the delete = %v", got)
	}
	if v := s.Snapshot("snap-1"); v != nil {
		t.Errorf("Store.Snapshot(snap-1) after the delete = %+v", v)
	}
}

func TestGroupCommit(t *testing.T) {
	// Updates queued while a commit is blocked all complete when it is
	// released, and each sees the writes of those before it.
	s := openStore(t, t.TempDir())
	release := holdCommits(t, s)
	const n = 5
	dones := make([]<-chan error, n)
	for i := 0; i < n; i++ {
		id := string(rune('a' + i))
		dones[i] = asyncUpdate(s, func(tx *Tx) { tx.PutVolume(vol(id, "name-"+id, "z", 1)) })
		waitWriter(t, s, id, func(tx *Tx) bool { return tx.Volume(id) != nil })
	}
	if got := s.ZoneUsage("z"); got != (Usage{Bytes: n}) {
		t.Errorf("ZoneUsage(z) with %d queued creates = %+v", n, got)
	}
	if got := mustList(s); len(got) != 0 {
		t.Errorf("ListVolumes = %v before any commit", volumeIDs(got))
	}
	release()
	for i, d := range dones {
		select {
		case err := <-d:
			if err != nil {
				t.Errorf("Update %d: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Update %d did not return", i)
		}
	}
	if got := volumeIDs(mustList(s)); !equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("ListVolumes after the commits = %v", got)
	}
}

func TestDeleteThenRecreate(t *testing.T) {
	tests := []struct {
		name string
		// holdCommit queues both updates behind one blocked commit.
		holdCommit bool
		updates    []func(tx *Tx)
	}{
		{name: "in one update", updates: []func(*Tx){
			func(tx *Tx) { tx.DeleteVolume("v1"); tx.PutVolume(vol("v1", "n1", "z", 99)) },
		}},
		{name: "in two updates", updates: []func(*Tx){
			func(tx *Tx) { tx.DeleteVolume("v1") },
			func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 99)) },
		}},
		{name: "in two updates sharing a commit", holdCommit: true, updates: []func(*Tx){
			func(tx *Tx) { tx.DeleteVolume("v1") },
			func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 99)) },
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 10)) })
			if tc.holdCommit {
				release := holdCommits(t, s)
				var dones []<-chan error
				for i, u := range tc.updates {
					dones = append(dones, asyncUpdate(s, u))
					// Wait until this update is in the writer's view.
					switch i {
					case 0:
						waitWriter(t, s, "delete", func(tx *Tx) bool { return tx.Volume("v1") == nil })
					case 1:
						waitWriter(t, s, "recreate", func(tx *Tx) bool { return tx.Volume("v1") != nil })
					}
				}
				release()
				for _, d := range dones {
					if err := <-d; err != nil {
						t.Fatal(err)
					}
				}
			} else {
				for _, u := range tc.updates {
					mustUpdate(t, s, u)
				}
			}
			check := func(when string, s *Store) {
				if v := s.Volume("v1"); v == nil || v.CapacityBytes != 99 {
					t.Errorf("%s: Store.Volume(v1) = %+v, want the recreated volume", when, v)
				}
				if v := s.VolumeByName("n1"); v == nil || v.CapacityBytes != 99 {
					t.Errorf("%s: Store.VolumeByName(n1) = %+v, want the recreated volume", when, v)
				}
				if got, _ := s.ListVolumes("", 1); !equal(volumeIDs(got), []string{"v1"}) {
					t.Errorf("%s: ListVolumes(\"\", 1) = %v, want [v1]", when, volumeIDs(got))
				}
				if got := s.ZoneUsage("z"); got != (Usage{Bytes: 99}) {
					t.Errorf("%s: ZoneUsage(z) = %+v, want {99 0}", when, got)
				}
			}
			check("before reopen", s)
			// A later commit reaps the deleted row; the new one must stay.
			mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v2", "n2", "y", 1)) })
			check("after a later commit", s)
			check("after reopen", reopen(t, s, dir))
		})
	}
}
