package state

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
func waitWriter(t *testing.T, s *Store, what string, cond func(r Reader) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		ok := false
		s.View(func(r Reader) { ok = cond(r) })
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s in the writer's view", what)
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
	waitWriter(t, s, "vol-2", func(r Reader) bool { return r.Volume("vol-2") != nil })

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
	s.View(func(r Reader) {
		if r.VolumeByName("n2") == nil || r.SnapshotByName("sn2") == nil || r.Publication("vol-1", "node") == nil {
			t.Errorf("writer's view misses a pending record")
		}
		if r.PublishedVolumes("node") != 1 {
			t.Errorf("PublishedVolumes(node) = %d while committing, want 1", r.PublishedVolumes("node"))
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
	waitWriter(t, s, "deletion of vol-2", func(r Reader) bool { return r.Volume("vol-2") == nil })

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
		waitWriter(t, s, id, func(r Reader) bool { return r.Volume(id) != nil })
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
						waitWriter(t, s, "delete", func(r Reader) bool { return r.Volume("v1") == nil })
					case 1:
						waitWriter(t, s, "recreate", func(r Reader) bool { return r.Volume("v1") != nil })
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

// queueBehindCommit holds commits and runs each update in turn, waiting
// until it is applied to the writer's view. The returned function lets
// the commit go and waits for every update to return.
func queueBehindCommit(t *testing.T, s *Store, updates ...func(tx *Tx)) (commit func()) {
	t.Helper()
	release := holdCommits(t, s)
	var dones []<-chan error
	for i, u := range updates {
		var seq uint64
		s.View(func(r Reader) { seq = r.s.seq })
		dones = append(dones, asyncUpdate(s, u))
		waitWriter(t, s, fmt.Sprintf("update %d", i), func(r Reader) bool { return r.s.seq > seq })
	}
	// The commit is blocked: no Update has returned.
	for i, d := range dones {
		select {
		case err := <-d:
			t.Fatalf("update %d returned (%v) before its commit", i, err)
		default:
		}
	}
	return func() {
		t.Helper()
		release()
		for i, d := range dones {
			select {
			case err := <-d:
				if err != nil {
					t.Fatalf("update %d: %v", i, err)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("update %d did not return after the commit was released", i)
			}
		}
	}
}

// diffViews describes how got differs from want, "" when they agree.
func diffViews(got, want map[string]string) string {
	var out []string
	for k := range want {
		if got[k] != want[k] {
			out = append(out, fmt.Sprintf("%s = %s, want %s", k, got[k], want[k]))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s = %s, not expected", k, got[k]))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

func orDash[T any](r *T, f func(*T) string) string {
	if r == nil {
		return "-"
	}
	return f(r)
}

// TestReadersKeepReplacedVersionUntilDurable: while the replacement of a
// durable record commits (ControllerExpandVolume rewriting a volume, say),
// readers keep seeing the durable version rather than nothing; the writer
// sees the replacement at once. Once committed, everyone sees the newest.
func TestReadersKeepReplacedVersionUntilDurable(t *testing.T) {
	// rec is the one volume v1 (name n1), snapshot s1 (name sn1, of v1)
	// and publication (v1, node) the cases replace.
	type rec struct {
		vol, snap int64
		readonly  bool
	}
	readerWant := func(r rec) map[string]string {
		return map[string]string{
			"Volume(v1)":          fmt.Sprint(r.vol),
			"VolumeByName(n1)":    fmt.Sprint(r.vol),
			"ListVolumes":         fmt.Sprintf("[v1:%d]", r.vol),
			"Snapshot(s1)":        fmt.Sprint(r.snap),
			"SnapshotByName(sn1)": fmt.Sprint(r.snap),
			"ListSnapshots(v1)":   fmt.Sprintf("[s1:%d]", r.snap),
			"PublishedNodes(v1)":  "[node]",
		}
	}
	// records asks Store and Reader the same: a record's size, or "-".
	records := func(f finder) map[string]string {
		volCap := func(v *Volume) string { return fmt.Sprint(v.CapacityBytes) }
		snapSize := func(v *Snapshot) string { return fmt.Sprint(v.SizeBytes) }
		return map[string]string{
			"Volume(v1)":          orDash(f.Volume("v1"), volCap),
			"VolumeByName(n1)":    orDash(f.VolumeByName("n1"), volCap),
			"Snapshot(s1)":        orDash(f.Snapshot("s1"), snapSize),
			"SnapshotByName(sn1)": orDash(f.SnapshotByName("sn1"), snapSize),
		}
	}
	readerView := func(s *Store) map[string]string {
		vols, _ := s.ListVolumes("", 0)
		var vl []string
		for _, v := range vols {
			vl = append(vl, fmt.Sprintf("%s:%d", v.ID, v.CapacityBytes))
		}
		snaps, _ := s.ListSnapshots("", 0, "v1")
		var sl []string
		for _, v := range snaps {
			sl = append(sl, fmt.Sprintf("%s:%d", v.ID, v.SizeBytes))
		}
		out := records(s)
		out["ListVolumes"] = fmt.Sprint(vl)
		out["ListSnapshots(v1)"] = fmt.Sprint(sl)
		out["PublishedNodes(v1)"] = fmt.Sprint(s.PublishedNodes("v1"))
		return out
	}
	writerWant := func(r rec) map[string]string {
		return map[string]string{
			"Volume(v1)":             fmt.Sprint(r.vol),
			"VolumeByName(n1)":       fmt.Sprint(r.vol),
			"Snapshot(s1)":           fmt.Sprint(r.snap),
			"SnapshotByName(sn1)":    fmt.Sprint(r.snap),
			"Publication(v1,node)":   fmt.Sprintf("readonly=%v", r.readonly),
			"PublishedVolumes(node)": "1",
			"Usage(z)":               fmt.Sprintf("%+v", Usage{Bytes: r.vol, Snapshots: 1}),
			"HasSnapshots(v1)":       "true",
			"IsPublished(v1)":        "true",
			"ZoneUsage(z) via Store": fmt.Sprintf("%+v", Usage{Bytes: r.vol, Snapshots: 1}),
		}
	}
	writerView := func(s *Store) map[string]string {
		var out map[string]string
		s.View(func(r Reader) {
			out = records(r)
			out["Publication(v1,node)"] = orDash(r.Publication("v1", "node"), func(p *Publication) string { return fmt.Sprintf("readonly=%v", p.Readonly) })
			out["PublishedVolumes(node)"] = fmt.Sprint(r.PublishedVolumes("node"))
			out["Usage(z)"] = fmt.Sprintf("%+v", r.Usage("z"))
			out["HasSnapshots(v1)"] = fmt.Sprint(r.HasSnapshots("v1"))
			out["IsPublished(v1)"] = fmt.Sprint(r.IsPublished("v1"))
		})
		out["ZoneUsage(z) via Store"] = fmt.Sprintf("%+v", s.ZoneUsage("z"))
		return out
	}
	putVol := func(capacity int64) func(tx *Tx) {
		return func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", capacity)) }
	}
	putSnap := func(size int64) func(tx *Tx) {
		return func(tx *Tx) { sn := snap("s1", "sn1", "v1", "z"); sn.SizeBytes = size; tx.PutSnapshot(sn) }
	}
	putPub := func(readonly bool) func(tx *Tx) {
		return func(tx *Tx) { tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "node", Readonly: readonly}) }
	}

	tests := []struct {
		name string
		// setup runs (and commits) after v1 (10 bytes), s1 (100 bytes) and
		// the read-write publication are created.
		setup []func(tx *Tx)
		// updates are queued behind one blocked commit.
		updates []func(tx *Tx)
		durable rec // what readers see while the updates commit
		final   rec // what the writer sees at once, and readers afterwards
	}{
		{
			name:    "volume expanded",
			updates: []func(*Tx){putVol(20)},
			durable: rec{vol: 10, snap: 100},
			final:   rec{vol: 20, snap: 100},
		},
		{
			name:    "volume replaced twice in two updates",
			updates: []func(*Tx){putVol(20), putVol(30)},
			durable: rec{vol: 10, snap: 100},
			final:   rec{vol: 30, snap: 100},
		},
		{
			name:    "volume replaced twice in one update",
			updates: []func(*Tx){func(tx *Tx) { putVol(20)(tx); putVol(30)(tx) }},
			durable: rec{vol: 10, snap: 100},
			final:   rec{vol: 30, snap: 100},
		},
		{
			name:    "replacement of a committed replacement",
			setup:   []func(*Tx){putVol(20)},
			updates: []func(*Tx){putVol(30)},
			durable: rec{vol: 20, snap: 100},
			final:   rec{vol: 30, snap: 100},
		},
		{
			name:    "volume replaced then snapshot replaced",
			updates: []func(*Tx){putVol(20), putSnap(200)},
			durable: rec{vol: 10, snap: 100},
			final:   rec{vol: 20, snap: 200},
		},
		{
			name:    "snapshot replaced",
			updates: []func(*Tx){putSnap(200)},
			durable: rec{vol: 10, snap: 100},
			final:   rec{vol: 10, snap: 200},
		},
		{
			name:    "publication replaced",
			updates: []func(*Tx){putPub(true)},
			durable: rec{vol: 10, snap: 100},
			final:   rec{vol: 10, snap: 100, readonly: true},
		},
		{
			name:    "everything replaced in one update",
			updates: []func(*Tx){func(tx *Tx) { putVol(40)(tx); putSnap(400)(tx); putPub(true)(tx) }},
			durable: rec{vol: 10, snap: 100},
			final:   rec{vol: 40, snap: 400, readonly: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			mustUpdate(t, s, func(tx *Tx) { putVol(10)(tx); putSnap(100)(tx); putPub(false)(tx) })
			for _, u := range tc.setup {
				mustUpdate(t, s, u)
			}
			if d := diffViews(readerView(s), readerWant(tc.durable)); d != "" {
				t.Fatalf("readers before the updates:\n%s", d)
			}

			commit := queueBehindCommit(t, s, tc.updates...)
			if d := diffViews(readerView(s), readerWant(tc.durable)); d != "" {
				t.Errorf("readers while the replacement commits, want the durable version:\n%s", d)
			}
			if d := diffViews(writerView(s), writerWant(tc.final)); d != "" {
				t.Errorf("writer while the replacement commits, want the replacement:\n%s", d)
			}

			commit()
			if d := diffViews(readerView(s), readerWant(tc.final)); d != "" {
				t.Errorf("readers after the commit:\n%s", d)
			}
			if d := diffViews(writerView(s), writerWant(tc.final)); d != "" {
				t.Errorf("writer after the commit:\n%s", d)
			}
			// A later commit reaps nothing readers still need.
			mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("other", "other", "y", 1)) })
			mustUpdate(t, s, func(tx *Tx) { tx.DeleteVolume("other") })
			if d := diffViews(readerView(s), readerWant(tc.final)); d != "" {
				t.Errorf("readers after a later commit:\n%s", d)
			}

			s = reopen(t, s, dir)
			if d := diffViews(readerView(s), readerWant(tc.final)); d != "" {
				t.Errorf("readers after reopen:\n%s", d)
			}
			if d := diffViews(writerView(s), writerWant(tc.final)); d != "" {
				t.Errorf("writer after reopen:\n%s", d)
			}
		})
	}
}

// TestReaderIndexesKeepEntriesUntilDurable: deleting, renaming or moving
// a record must not drop it from the name, source and publication indexes
// readers use before the change is durable; the writer's lookups see the
// change at once. After the commit readers and writer agree.
func TestReaderIndexesKeepEntriesUntilDurable(t *testing.T) {
	// Every case starts from volumes vA (name na) and vB (nb), snapshot s1
	// (name sa) of vA, and vA published to node-1.
	setup := func(tx *Tx) {
		tx.PutVolume(vol("vA", "na", "z", 10))
		tx.PutVolume(vol("vB", "nb", "z", 10))
		tx.PutSnapshot(snap("s1", "sa", "vA", "z"))
		tx.PutPublication(&Publication{VolumeID: "vA", NodeID: "node-1"})
	}
	// Lookups by key; both views have the keys in shared, the reader also
	// the reader-only ones and the writer the writer-only ones.
	shared := map[string]string{
		"Volume(vA)":          "vA",
		"VolumeByName(na)":    "vA",
		"VolumeByName(na2)":   "-",
		"Snapshot(s1)":        "s1",
		"SnapshotByName(sa)":  "s1",
		"SnapshotByName(sa2)": "-",
	}
	readerOnly := map[string]string{
		"ListSnapshots(source vA)": "[s1]",
		"ListSnapshots(source vB)": "[]",
		"PublishedNodes(vA)":       "[node-1]",
	}
	writerOnly := map[string]string{
		"HasSnapshots(vA)":         "true",
		"HasSnapshots(vB)":         "false",
		"IsPublished(vA)":          "true",
		"PublishedVolumes(node-1)": "1",
	}
	want := func(only, changes map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range []map[string]string{shared, only} {
			for k, v := range m {
				out[k] = v
			}
		}
		for k, v := range changes {
			if _, ok := out[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	// records asks Store and Reader the same: which record answers, or "-".
	records := func(f finder) map[string]string {
		volID := func(v *Volume) string { return v.ID }
		snapID := func(v *Snapshot) string { return v.ID }
		return map[string]string{
			"Volume(vA)":          orDash(f.Volume("vA"), volID),
			"VolumeByName(na)":    orDash(f.VolumeByName("na"), volID),
			"VolumeByName(na2)":   orDash(f.VolumeByName("na2"), volID),
			"Snapshot(s1)":        orDash(f.Snapshot("s1"), snapID),
			"SnapshotByName(sa)":  orDash(f.SnapshotByName("sa"), snapID),
			"SnapshotByName(sa2)": orDash(f.SnapshotByName("sa2"), snapID),
		}
	}
	readerView := func(s *Store) map[string]string {
		listed := func(source string) string {
			got, _ := s.ListSnapshots("", 0, source)
			return fmt.Sprint(snapshotIDs(got))
		}
		out := records(s)
		out["ListSnapshots(source vA)"] = listed("vA")
		out["ListSnapshots(source vB)"] = listed("vB")
		out["PublishedNodes(vA)"] = fmt.Sprint(sorted(s.PublishedNodes("vA")))
		return out
	}
	writerView := func(s *Store) map[string]string {
		var out map[string]string
		s.View(func(r Reader) {
			out = records(r)
			out["HasSnapshots(vA)"] = fmt.Sprint(r.HasSnapshots("vA"))
			out["HasSnapshots(vB)"] = fmt.Sprint(r.HasSnapshots("vB"))
			out["IsPublished(vA)"] = fmt.Sprint(r.IsPublished("vA"))
			out["PublishedVolumes(node-1)"] = fmt.Sprint(r.PublishedVolumes("node-1"))
		})
		return out
	}

	deleteVolume := func(tx *Tx) { tx.DeleteVolume("vA") }
	deleteSnapshot := func(tx *Tx) { tx.DeleteSnapshot("s1") }
	deletePublication := func(tx *Tx) { tx.DeletePublication("vA", "node-1") }
	renameVolume := func(name string) func(tx *Tx) {
		return func(tx *Tx) { tx.PutVolume(vol("vA", name, "z", 10)) }
	}
	putSnapshot := func(name, source string) func(tx *Tx) {
		return func(tx *Tx) { tx.PutSnapshot(snap("s1", name, source, "z")) }
	}
	volumeGone := map[string]string{"Volume(vA)": "-", "VolumeByName(na)": "-"}
	snapshotGone := map[string]string{
		"Snapshot(s1)": "-", "SnapshotByName(sa)": "-",
		"ListSnapshots(source vA)": "[]", "HasSnapshots(vA)": "false",
	}
	publicationGone := map[string]string{
		"PublishedNodes(vA)": "[]", "IsPublished(vA)": "false", "PublishedVolumes(node-1)": "0",
	}
	merge := func(ms ...map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}

	tests := []struct {
		name    string
		updates []func(tx *Tx) // queued behind one blocked commit
		changes map[string]string
	}{
		{"volume deleted", []func(*Tx){deleteVolume}, volumeGone},
		{"snapshot deleted", []func(*Tx){deleteSnapshot}, snapshotGone},
		{"publication deleted", []func(*Tx){deletePublication}, publicationGone},
		{"all three deleted in one update",
			[]func(*Tx){func(tx *Tx) { deletePublication(tx); deleteSnapshot(tx); deleteVolume(tx) }},
			merge(volumeGone, snapshotGone, publicationGone)},
		{"all three deleted in three updates",
			[]func(*Tx){deletePublication, deleteSnapshot, deleteVolume},
			merge(volumeGone, snapshotGone, publicationGone)},
		{"volume renamed by replacement", []func(*Tx){renameVolume("na2")},
			map[string]string{"VolumeByName(na)": "-", "VolumeByName(na2)": "vA"}},
		{"volume renamed then deleted", []func(*Tx){renameVolume("na2"), deleteVolume},
			volumeGone},
		{"volume renamed and renamed back", []func(*Tx){renameVolume("na2"), renameVolume("na")},
			nil},
		{"snapshot renamed by replacement", []func(*Tx){putSnapshot("sa2", "vA")},
			map[string]string{"SnapshotByName(sa)": "-", "SnapshotByName(sa2)": "s1"}},
		{"snapshot moved to another source", []func(*Tx){putSnapshot("sa", "vB")},
			map[string]string{
				"ListSnapshots(source vA)": "[]", "ListSnapshots(source vB)": "[s1]",
				"HasSnapshots(vA)": "false", "HasSnapshots(vB)": "true",
			}},
		{"snapshot moved away and back", []func(*Tx){putSnapshot("sa", "vB"), putSnapshot("sa", "vA")},
			nil},
		{"snapshot moved then deleted", []func(*Tx){putSnapshot("sa", "vB"), deleteSnapshot},
			snapshotGone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			mustUpdate(t, s, setup)
			durableReader := want(readerOnly, nil)
			finalReader := want(readerOnly, tc.changes)
			finalWriter := want(writerOnly, tc.changes)
			if d := diffViews(readerView(s), durableReader); d != "" {
				t.Fatalf("readers before the updates:\n%s", d)
			}

			commit := queueBehindCommit(t, s, tc.updates...)
			if d := diffViews(readerView(s), durableReader); d != "" {
				t.Errorf("readers while the change commits, want the durable state:\n%s", d)
			}
			if d := diffViews(writerView(s), finalWriter); d != "" {
				t.Errorf("writer while the change commits, want the change:\n%s", d)
			}

			commit()
			if d := diffViews(readerView(s), finalReader); d != "" {
				t.Errorf("readers after the commit:\n%s", d)
			}
			if d := diffViews(writerView(s), finalWriter); d != "" {
				t.Errorf("writer after the commit:\n%s", d)
			}
			// A later commit reaps nothing readers still need.
			mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("other", "other", "y", 1)) })
			mustUpdate(t, s, func(tx *Tx) { tx.DeleteVolume("other") })
			if d := diffViews(readerView(s), finalReader); d != "" {
				t.Errorf("readers after a later commit:\n%s", d)
			}

			s = reopen(t, s, dir)
			if d := diffViews(readerView(s), finalReader); d != "" {
				t.Errorf("readers after reopen:\n%s", d)
			}
			if d := diffViews(writerView(s), finalWriter); d != "" {
				t.Errorf("writer after reopen:\n%s", d)
			}
		})
	}
}
