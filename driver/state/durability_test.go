package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestReopenKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)

	vols := []*Volume{
		{ID: "vol-a", Name: "pvc-a", CapacityBytes: 1 << 20, Zone: "east/a", Block: true,
			Parameters: map[string]string{"tier": "gold", "x": ""}, Created: created},
		{ID: "vol-b", Name: "pvc-b", CapacityBytes: 3 << 20, Zone: "east/b", SourceSnapshot: "snap-a", Created: created.Add(time.Hour)},
		{ID: "vol-c", Name: "pvc-c", CapacityBytes: 7, Zone: "east/a", SourceVolume: "vol-a"},
		{ID: "vol-gone", Name: "pvc-gone", CapacityBytes: 1000, Zone: "east/a", Created: created},
	}
	snaps := []*Snapshot{
		{ID: "snap-a", Name: "vs-a", SourceVolume: "vol-a", SizeBytes: 1 << 20, Zones: []string{"east/a", "west/a"},
			RegionWide: true, Parameters: map[string]string{"p": "q"}, Created: created},
		{ID: "snap-gone", Name: "vs-gone", SourceVolume: "vol-a", SizeBytes: 1, Zones: []string{"east/a"}, Created: created},
	}
	pubs := []*Publication{
		{VolumeID: "vol-a", NodeID: "node-1", Readonly: true},
		{VolumeID: "vol-a", NodeID: "node-gone"},
	}
	mounts := []*Mount{
		{VolumeID: "vol-a", Path: "/var/lib/kubelet/stage/a", Staging: true, Mounted: true},
		{VolumeID: "vol-a", Path: "/var/lib/kubelet/pods/p/a", Readonly: true, Block: true},
		{VolumeID: "vol-a", Path: "/gone"},
	}
	mustUpdate(t, s, func(tx *Tx) {
		for _, v := range vols {
			tx.PutVolume(v)
		}
		for _, v := range snaps {
			tx.PutSnapshot(v)
		}
	})
	mustUpdate(t, s, func(tx *Tx) {
		for _, p := range pubs {
			tx.PutPublication(p)
		}
		for _, m := range mounts {
			tx.PutMount(m)
		}
	})
	mustUpdate(t, s, func(tx *Tx) {
		tx.DeleteVolume("vol-gone")
		tx.DeleteSnapshot("snap-gone")
		tx.DeletePublication("vol-a", "node-gone")
		tx.DeleteMount("vol-a", "/gone")
	})
	// Replace after the first write: the newest version must survive.
	vols[2] = &Volume{ID: "vol-c", Name: "pvc-c", CapacityBytes: 70, Zone: "east/a", SourceVolume: "vol-a", Created: created}
	mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vols[2]) })

	for round := 1; round <= 2; round++ {
		s = reopen(t, s, dir)
		t.Run(fmt.Sprintf("reopen %d", round), func(t *testing.T) {
			gotVols, next := s.ListVolumes("", 0)
			if next != "" || !equal(volumeIDs(gotVols), []string{"vol-a", "vol-b", "vol-c"}) {
				t.Fatalf("ListVolumes = %v, %q", volumeIDs(gotVols), next)
			}
			for i, v := range gotVols {
				if !equal(v, vols[i]) {
					t.Errorf("volume %s =\n%+v\nwant\n%+v", v.ID, v, vols[i])
				}
				if byName := s.VolumeByName(vols[i].Name); byName == nil || byName.ID != vols[i].ID {
					t.Errorf("VolumeByName(%s) = %+v", vols[i].Name, byName)
				}
			}
			if !gotVols[0].Created.Equal(created) || !gotVols[1].Created.Equal(created.Add(time.Hour)) {
				t.Errorf("Created times = %v, %v", gotVols[0].Created, gotVols[1].Created)
			}
			if s.Volume("vol-gone") != nil || s.VolumeByName("pvc-gone") != nil {
				t.Errorf("deleted volume came back")
			}

			gotSnaps, _ := s.ListSnapshots("", 0, "")
			if len(gotSnaps) != 1 || !equal(gotSnaps[0], snaps[0]) {
				t.Errorf("ListSnapshots = %+v, want only %+v", gotSnaps, snaps[0])
			}
			if got := s.SnapshotByName("vs-a"); got == nil || got.ID != "snap-a" {
				t.Errorf("SnapshotByName(vs-a) = %+v", got)
			}
			if s.Snapshot("snap-gone") != nil || s.SnapshotByName("vs-gone") != nil {
				t.Errorf("deleted snapshot came back")
			}
			if got, _ := s.ListSnapshots("", 0, "vol-a"); !equal(snapshotIDs(got), []string{"snap-a"}) {
				t.Errorf("ListSnapshots(source vol-a) = %v", snapshotIDs(got))
			}

			if got := s.PublishedNodes("vol-a"); !equal(got, []string{"node-1"}) {
				t.Errorf("PublishedNodes(vol-a) = %v", got)
			}
			s.View(func(r Reader) {
				if got := r.Publication("vol-a", "node-1"); !equal(got, pubs[0]) {
					t.Errorf("Publication(vol-a, node-1) = %+v", got)
				}
				if r.Publication("vol-a", "node-gone") != nil {
					t.Errorf("deleted publication came back")
				}
				if got := r.PublishedVolumes("node-1"); got != 1 {
					t.Errorf("PublishedVolumes(node-1) = %d", got)
				}
				if got := r.PublishedVolumes("node-gone"); got != 0 {
					t.Errorf("PublishedVolumes(node-gone) = %d", got)
				}
				if !r.HasSnapshots("vol-a") || r.HasSnapshots("vol-b") {
					t.Errorf("HasSnapshots(vol-a, vol-b) = %v, %v", r.HasSnapshots("vol-a"), r.HasSnapshots("vol-b"))
				}
				var gotMounts []*Mount
				for _, m := range r.MountsOf("vol-a") {
					gotMounts = append(gotMounts, m)
				}
				want := []*Mount{mounts[1], mounts[0]} // path order
				if !equal(gotMounts, want) {
					t.Errorf("MountsOf(vol-a) = %+v, want %+v", gotMounts, want)
				}
			})

			// Usage is recomputed from the records.
			usage := map[string]Usage{
				"east/a": {Bytes: 1<<20 + 70, Snapshots: 1},
				"east/b": {Bytes: 3 << 20},
				"west/a": {Snapshots: 1},
			}
			for zone, want := range usage {
				if got := s.ZoneUsage(zone); got != want {
					t.Errorf("ZoneUsage(%s) = %+v, want %+v", zone, got, want)
				}
			}
		})
	}
}

func TestConcurrentUpdates(t *testing.T) {
	const workers, perWorker = 8, 200
	dir := t.TempDir()
	s := openStore(t, dir)

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				id := fmt.Sprintf("vol-%d-%03d", w, i)
				err := s.Update(func(tx *Tx) error {
					if tx.VolumeByName("name-"+id) != nil {
						return fmt.Errorf("%s exists before its creation", id)
					}
					tx.PutVolume(vol(id, "name-"+id, fmt.Sprintf("zone-%d", w), int64(i+1)))
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				// Once Update returned, readers see the volume.
				if v := s.Volume(id); v == nil || v.Name != "name-"+id {
					errs <- fmt.Errorf("Volume(%s) after its Update = %+v", id, v)
					return
				}
			}
		}()
	}
	// Readers run alongside the writers.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				vs, _ := s.ListVolumes("", 0)
				for _, v := range vs {
					_ = v.CapacityBytes
				}
				s.ZoneUsage("zone-0")
				s.VolumeByName("name-vol-0-000")
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	check := func(when string, s *Store) {
		vs, next := s.ListVolumes("", 0)
		if len(vs) != workers*perWorker || next != "" {
			t.Fatalf("%s: ListVolumes has %d volumes (next %q), want %d", when, len(vs), next, workers*perWorker)
		}
		for w := 0; w < workers; w++ {
			// sum of 1..perWorker
			want := Usage{Bytes: perWorker * (perWorker + 1) / 2}
			if got := s.ZoneUsage(fmt.Sprintf("zone-%d", w)); got != want {
				t.Errorf("%s: ZoneUsage(zone-%d) = %+v, want %+v", when, w, got, want)
			}
			for i := 0; i < perWorker; i++ {
				id := fmt.Sprintf("vol-%d-%03d", w, i)
				v := s.Volume(id)
				if v == nil || v.CapacityBytes != int64(i+1) || v.Zone != fmt.Sprintf("zone-%d", w) {
					t.Fatalf("%s: Volume(%s) = %+v", when, id, v)
				}
			}
		}
	}
	check("before reopen", s)
	check("after reopen", reopen(t, s, dir))
}

func TestOpenInUse(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 1)) })

	start := time.Now()
	s2, err := Open(dir)
	elapsed := time.Since(start)
	if err == nil {
		s2.Close()
		t.Fatalf("second Open of %s succeeded while the first store is open", dir)
	}
	if !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), dir) {
		t.Errorf("second Open error = %q, want it to say %s is in use", err, dir)
	}
	if elapsed < 1500*time.Millisecond || elapsed > 4*time.Second {
		t.Errorf("second Open failed after %v, want about 2s", elapsed)
	}
	// The first store is unaffected.
	mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v2", "n2", "z", 1)) })
	if s.Volume("v2") == nil {
		t.Errorf("first store lost a write after the failed Open")
	}
	// Once closed, the directory can be opened again.
	s3 := reopen(t, s, dir)
	if got := volumeIDs(mustList(s3)); !equal(got, []string{"v1", "v2"}) {
		t.Errorf("after reopen ListVolumes = %v", got)
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "state")
	s := openStore(t, dir)
	mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 1)) })
	s = reopen(t, s, dir)
	if s.Volume("v1") == nil {
		t.Errorf("volume missing after reopen of a created directory")
	}
}

// TestOpenSyncsDirectory checks that Open makes the database's directory
// entry durable, and the directory's own entry, which MkdirAll may just
// have made: bbolt fsyncs only the file. A volatile store syncs nothing,
// and still keeps what it committed while open.
func TestOpenSyncsDirectory(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want func(dir string) []string
	}{
		{name: "durable", want: func(dir string) []string { return []string{dir, filepath.Dir(dir)} }},
		{name: "volatile", opts: []Option{Volatile()}, want: func(string) []string { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			var synced []string
			real := syncDir
			syncDir = func(path string) error {
				synced = append(synced, path)
				return real(path)
			}
			defer func() { syncDir = real }()
			s, err := Open(dir, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 1)) })
			if want := tc.want(dir); !equal(synced, want) || s.Volume("v1") == nil {
				t.Errorf("Open fsynced %q, want %q; volume committed: %v", synced, want, s.Volume("v1") != nil)
			}
		})
	}
}

// TestBeforeCommit checks the hook runs before each commit, while its
// records are not yet durable, and that its failure is a commit failure.
func TestBeforeCommit(t *testing.T) {
	t.Run("runs before the records are durable", func(t *testing.T) {
		var s *Store
		var calls int
		var sawRecord bool
		s, err := Open(t.TempDir(), BeforeCommit(func() error {
			calls++
			sawRecord = sawRecord || s.Volume("v1") != nil
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Update(func(*Tx) error { return nil }); err != nil || calls != 0 {
			t.Errorf("Update without writes: %v, %d hook calls, want none", err, calls)
		}
		mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 1)) })
		if calls != 1 || sawRecord {
			t.Errorf("hook called %d times, saw the record durable: %v; want once, before", calls, sawRecord)
		}
	})
	t.Run("failure fails the commit", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, BeforeCommit(func() error { return errors.New("disk gone") }))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Update(func(tx *Tx) error { tx.PutVolume(vol("v1", "n1", "z", 1)); return nil })
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "disk gone") {
			t.Errorf("Update = %v, want INTERNAL naming the hook's error", err)
		}
		s.Close()
		if s = openStore(t, dir); s.Volume("v1") != nil {
			t.Errorf("volume committed although the hook failed")
		}
	})
}

// rawPut writes value under key in bucket, bypassing the store.
func rawPut(t *testing.T, dir, bucket, key string, value []byte) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(bucket))
		if err != nil {
			return err
		}
		if value == nil {
			return b.Delete([]byte(key))
		}
		return b.Put([]byte(key), value)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenCorruptRecord: a record that does not decode, or lies under
// another key, fails Open with an error naming the database file (bbolt
// forgets its path once closed, so it must be taken before), the bucket
// and the key; and the failed Open releases the database.
func TestOpenCorruptRecord(t *testing.T) {
	tests := []struct {
		name, bucket, key, value string
		want                     string
	}{
		{"garbage volume", "volumes", "vol-x", "{not json", `bucket volumes key "vol-x"`},
		{"wrong type in snapshot", "snapshots", "snap-x", `{"id":"snap-x","sizeBytes":"big"}`, `bucket snapshots key "snap-x"`},
		{"snapshot of the wrong shape", "snapshots", "snap-x", `{"zones":"east/a"}`, `bucket snapshots key "snap-x"`},
		{"truncated publication", "publications", "v\x00n", `{"volumeId":"v",`, `bucket publications key "v\x00n"`},
		{"empty publication", "publications", "v\x00n", ``, `bucket publications key "v\x00n"`},
		{"garbage mount", "mounts", "v\x00/p", `[]`, `bucket mounts key "v\x00/p"`},
		{"record under the wrong key", "volumes", "vol-x", `{"id":"vol-y","name":"n"}`, `bucket volumes key "vol-x" holds a record for "vol-y"`},
		{"mount under another key", "mounts", "v\x00/a", `{"volumeId":"v","path":"/b"}`, `holds a record for "v\x00/b"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state dir")
			s := openStore(t, dir)
			mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("vol-ok", "n", "z", 5)) })
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			rawPut(t, dir, tc.bucket, tc.key, []byte(tc.value))

			s2, err := Open(dir)
			if err == nil {
				s2.Close()
				t.Fatalf("Open succeeded with a corrupt record in %s", tc.bucket)
			}
			for _, w := range []string{"loading state database " + filepath.Join(dir, "state.db") + ": ", tc.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Open error %q does not contain %q", err, w)
				}
			}
			// The failed Open released the database: after repair it opens
			// at once with the good record intact.
			rawPut(t, dir, tc.bucket, tc.key, nil)
			start := time.Now()
			s3 := openStore(t, dir)
			if d := time.Since(start); d > time.Second {
				t.Errorf("Open after repair took %v: the failed Open kept the lock", d)
			}
			if v := s3.Volume("vol-ok"); v == nil || v.CapacityBytes != 5 {
				t.Errorf("Volume(vol-ok) after repair = %+v", v)
			}
		})
	}
}
