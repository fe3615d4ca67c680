package state

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestVolumes(t *testing.T) {
	s := openStore(t, t.TempDir())
	v1 := &Volume{
		ID: "vol-1", Name: "pvc-1", Zone: "east/a", CapacityBytes: 1 << 30, Block: true,
		Parameters: map[string]string{"fs": "ext4"}, SourceSnapshot: "snap-9", Created: created,
	}
	v2 := &Volume{ID: "vol-2", Name: "pvc-2", Zone: "east/b", CapacityBytes: 5, SourceVolume: "vol-1", Created: created}
	mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(v1); tx.PutVolume(v2) })

	lookups := volumeLookups(s)
	lookups.check(t, s, "vol-1", "pvc-1", v1)
	lookups.check(t, s, "vol-2", "pvc-2", v2)
	lookups.check(t, s, "vol-3", "pvc-3", nil)
	lookups.check(t, s, "", "", nil)
	// IDs are not names and names are not IDs.
	if v := s.VolumeByName("vol-1"); v != nil {
		t.Errorf("VolumeByName(vol-1) = %+v, want nil", v)
	}
	if v := s.Volume("pvc-1"); v != nil {
		t.Errorf("Volume(pvc-1) = %+v, want nil", v)
	}

	mustUpdate(t, s, func(tx *Tx) { tx.DeleteVolume("vol-1") })
	lookups.check(t, s, "vol-1", "pvc-1", nil)
	lookups.check(t, s, "vol-2", "pvc-2", v2)
	if got := volumeIDs(mustList(s)); !equal(got, []string{"vol-2"}) {
		t.Errorf("ListVolumes after delete = %v, want [vol-2]", got)
	}
	// Deleting what does not exist is a no-op that succeeds.
	mustUpdate(t, s, func(tx *Tx) { tx.DeleteVolume("vol-1"); tx.DeleteVolume("nope") })
	if got := volumeIDs(mustList(s)); !equal(got, []string{"vol-2"}) {
		t.Errorf("ListVolumes after no-op deletes = %v, want [vol-2]", got)
	}
}

func mustList(s *Store) []*Volume {
	vs, _ := s.ListVolumes("", 0)
	return vs
}

func TestVolumeNameIndex(t *testing.T) {
	tests := []struct {
		name  string
		steps []func(tx *Tx)
		// wantByName maps a name to the ID it must resolve to ("" = none).
		wantByName map[string]string
	}{
		{
			name: "rename by replacing",
			steps: []func(*Tx){
				func(tx *Tx) { tx.PutVolume(vol("v1", "old", "z", 1)) },
				func(tx *Tx) { tx.PutVolume(vol("v1", "new", "z", 1)) },
			},
			wantByName: map[string]string{"old": "", "new": "v1"},
		},
		{
			name: "name moves to a new volume in one update, put first",
			steps: []func(*Tx){
				func(tx *Tx) { tx.PutVolume(vol("v1", "n", "z", 1)) },
				func(tx *Tx) { tx.PutVolume(vol("v2", "n", "z", 1)); tx.DeleteVolume("v1") },
			},
			wantByName: map[string]string{"n": "v2"},
		},
		{
			name: "name moves to a new volume in one update, delete first",
			steps: []func(*Tx){
				func(tx *Tx) { tx.PutVolume(vol("v1", "n", "z", 1)) },
				func(tx *Tx) { tx.DeleteVolume("v1"); tx.PutVolume(vol("v2", "n", "z", 1)) },
			},
			wantByName: map[string]string{"n": "v2"},
		},
		{
			name: "deleting one volume keeps the other's name",
			steps: []func(*Tx){
				func(tx *Tx) { tx.PutVolume(vol("v1", "a", "z", 1)); tx.PutVolume(vol("v2", "b", "z", 1)) },
				func(tx *Tx) { tx.DeleteVolume("v1") },
			},
			wantByName: map[string]string{"a": "", "b": "v2"},
		},
		{
			name: "put then delete in one update",
			steps: []func(*Tx){
				func(tx *Tx) { tx.PutVolume(vol("v1", "a", "z", 1)); tx.DeleteVolume("v1") },
			},
			wantByName: map[string]string{"a": ""},
		},
		{
			name: "recreate after delete",
			steps: []func(*Tx){
				func(tx *Tx) { tx.PutVolume(vol("v1", "a", "z", 1)) },
				func(tx *Tx) { tx.DeleteVolume("v1") },
				func(tx *Tx) { tx.PutVolume(vol("v1", "a", "z", 2)) },
			},
			wantByName: map[string]string{"a": "v1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			for _, step := range tc.steps {
				mustUpdate(t, s, step)
			}
			check := func(when string, s *Store) {
				for name, wantID := range tc.wantByName {
					gotID := ""
					if v := s.VolumeByName(name); v != nil {
						gotID = v.ID
					}
					if gotID != wantID {
						t.Errorf("%s: Store.VolumeByName(%q) = %q, want %q", when, name, gotID, wantID)
					}
					s.View(func(r Reader) {
						gotID := ""
						if v := r.VolumeByName(name); v != nil {
							gotID = v.ID
						}
						if gotID != wantID {
							t.Errorf("%s: Tx.VolumeByName(%q) = %q, want %q", when, name, gotID, wantID)
						}
					})
				}
			}
			check("before reopen", s)
			check("after reopen", reopen(t, s, dir))
		})
	}
}

// lookups are the four ways to find a record of one kind: by ID and by
// name, in the durable view (Store) and in the writer's (Reader).
type lookups[T any] struct {
	kind                     string
	storeByID, storeByName   func(string) *T
	readerByID, readerByName func(Reader, string) *T
}

func volumeLookups(s *Store) lookups[Volume] {
	return lookups[Volume]{"Volume", s.Volume, s.VolumeByName, Reader.Volume, Reader.VolumeByName}
}

func snapshotLookups(s *Store) lookups[Snapshot] {
	return lookups[Snapshot]{"Snapshot", s.Snapshot, s.SnapshotByName, Reader.Snapshot, Reader.SnapshotByName}
}

// check finds id and name every way and wants each to give want.
func (l lookups[T]) check(t *testing.T, s *Store, id, name string, want *T) {
	t.Helper()
	var fromReader [2]*T
	s.View(func(r Reader) { fromReader = [2]*T{l.readerByID(r, id), l.readerByName(r, name)} })
	for _, c := range []struct {
		call string
		got  *T
	}{
		{fmt.Sprintf("Store.%s(%q)", l.kind, id), l.storeByID(id)},
		{fmt.Sprintf("Store.%sByName(%q)", l.kind, name), l.storeByName(name)},
		{fmt.Sprintf("Reader.%s(%q)", l.kind, id), fromReader[0]},
		{fmt.Sprintf("Reader.%sByName(%q)", l.kind, name), fromReader[1]},
	} {
		if diff := cmp.Diff(want, c.got, ignoreVisibility); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", c.call, diff)
		}
	}
}

func TestSnapshots(t *testing.T) {
	s := openStore(t, t.TempDir())
	s1 := &Snapshot{ID: "snap-1", Name: "vs-1", SourceVolume: "vol-1", SizeBytes: 42, Zones: []string{"east/a", "east/b"},
		RegionWide: true, Parameters: map[string]string{"k": "v"}, Created: created}
	s2 := snap("snap-2", "vs-2", "vol-2", "west/a")
	mustUpdate(t, s, func(tx *Tx) { tx.PutSnapshot(s1); tx.PutSnapshot(s2) })

	lookups := snapshotLookups(s)
	lookups.check(t, s, "snap-1", "vs-1", s1)
	lookups.check(t, s, "snap-2", "vs-2", s2)
	lookups.check(t, s, "snap-3", "vs-3", nil)
	s.View(func(r Reader) {
		for vol, want := range map[string]bool{"vol-1": true, "vol-2": true, "vol-3": false} {
			if got := r.HasSnapshots(vol); got != want {
				t.Errorf("HasSnapshots(%s) = %v, want %v", vol, got, want)
			}
		}
	})

	// Replacing a snapshot with a new source moves it in the source index.
	mustUpdate(t, s, func(tx *Tx) { tx.PutSnapshot(snap("snap-2", "vs-2b", "vol-1", "west/a")) })
	s.View(func(r Reader) {
		if r.HasSnapshots("vol-2") {
			t.Errorf("HasSnapshots(vol-2) = true after snap-2 moved to vol-1")
		}
		if r.SnapshotByName("vs-2") != nil {
			t.Errorf("SnapshotByName(vs-2) still set after rename")
		}
		if got := r.SnapshotByName("vs-2b"); got == nil || got.ID != "snap-2" {
			t.Errorf("SnapshotByName(vs-2b) = %+v", got)
		}
	})

	mustUpdate(t, s, func(tx *Tx) { tx.DeleteSnapshot("snap-1") })
	lookups.check(t, s, "snap-1", "vs-1", nil)
	s.View(func(r Reader) {
		if !r.HasSnapshots("vol-1") {
			t.Errorf("HasSnapshots(vol-1) = false while snap-2 remains")
		}
	})
	mustUpdate(t, s, func(tx *Tx) { tx.DeleteSnapshot("snap-2") })
	s.View(func(r Reader) {
		if r.HasSnapshots("vol-1") {
			t.Errorf("HasSnapshots(vol-1) = true after deleting every snapshot")
		}
	})
	if got, next := s.ListSnapshots("", 0, ""); len(got) != 0 || next != "" {
		t.Errorf("ListSnapshots after deleting all = %v, %q", snapshotIDs(got), next)
	}
}

func TestPublications(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustUpdate(t, s, func(tx *Tx) {
		tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "n1", Readonly: true})
		tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "n2"})
		tx.PutPublication(&Publication{VolumeID: "v2", NodeID: "n1"})
	})

	type want struct {
		nodesOf     map[string][]string
		perNode     map[string]int
		isPublished map[string]bool
		pubs        map[[2]string]*Publication
	}
	check := func(t *testing.T, s *Store, w want) {
		t.Helper()
		for vol, nodes := range w.nodesOf {
			if got := sorted(s.PublishedNodes(vol)); !equal(got, sorted(nodes)) && !(len(got) == 0 && len(nodes) == 0) {
				t.Errorf("PublishedNodes(%s) = %v, want %v", vol, got, nodes)
			}
		}
		s.View(func(r Reader) {
			for node, n := range w.perNode {
				if got := r.PublishedVolumes(node); got != n {
					t.Errorf("PublishedVolumes(%s) = %d, want %d", node, got, n)
				}
			}
			for vol, p := range w.isPublished {
				if got := r.IsPublished(vol); got != p {
					t.Errorf("IsPublished(%s) = %v, want %v", vol, got, p)
				}
			}
			for k, p := range w.pubs {
				if got := r.Publication(k[0], k[1]); !equal(got, p) {
					t.Errorf("Publication(%s, %s) = %+v, want %+v", k[0], k[1], got, p)
				}
			}
		})
	}

	steps := []struct {
		name string
		fn   func(tx *Tx)
		want want
	}{
		{
			name: "initial",
			fn:   func(tx *Tx) {},
			want: want{
				nodesOf:     map[string][]string{"v1": {"n1", "n2"}, "v2": {"n1"}, "v3": nil},
				perNode:     map[string]int{"n1": 2, "n2": 1, "n3": 0},
				isPublished: map[string]bool{"v1": true, "v2": true, "v3": false},
				pubs: map[[2]string]*Publication{
					{"v1", "n1"}: {VolumeID: "v1", NodeID: "n1", Readonly: true},
					{"v1", "n2"}: {VolumeID: "v1", NodeID: "n2"},
					{"v2", "n2"}: nil,
				},
			},
		},
		{
			name: "republish readonly=false does not double count",
			fn:   func(tx *Tx) { tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "n1"}) },
			want: want{
				nodesOf: map[string][]string{"v1": {"n1", "n2"}},
				perNode: map[string]int{"n1": 2, "n2": 1},
				pubs:    map[[2]string]*Publication{{"v1", "n1"}: {VolumeID: "v1", NodeID: "n1"}},
			},
		},
		{
			name: "unpublish one",
			fn:   func(tx *Tx) { tx.DeletePublication("v1", "n1") },
			want: want{
				nodesOf:     map[string][]string{"v1": {"n2"}, "v2": {"n1"}},
				perNode:     map[string]int{"n1": 1, "n2": 1},
				isPublished: map[string]bool{"v1": true, "v2": true},
				pubs:        map[[2]string]*Publication{{"v1", "n1"}: nil},
			},
		},
		{
			name: "unpublish unknown is a no-op",
			fn:   func(tx *Tx) { tx.DeletePublication("v1", "n1"); tx.DeletePublication("v9", "n9") },
			want: want{
				perNode: map[string]int{"n1": 1, "n2": 1, "n9": 0},
			},
		},
		{
			name: "unpublish rest",
			fn:   func(tx *Tx) { tx.DeletePublication("v1", "n2"); tx.DeletePublication("v2", "n1") },
			want: want{
				nodesOf:     map[string][]string{"v1": nil, "v2": nil},
				perNode:     map[string]int{"n1": 0, "n2": 0},
				isPublished: map[string]bool{"v1": false, "v2": false},
			},
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			mustUpdate(t, s, st.fn)
			check(t, s, st.want)
		})
	}

	// Reload recomputes the indexes from disk.
	mustUpdate(t, s, func(tx *Tx) {
		tx.PutPublication(&Publication{VolumeID: "v5", NodeID: "n5", Readonly: true})
		tx.PutPublication(&Publication{VolumeID: "v6", NodeID: "n5"})
	})
	s = reopen(t, s, dir)
	check(t, s, want{
		nodesOf:     map[string][]string{"v5": {"n5"}, "v6": {"n5"}, "v1": nil},
		perNode:     map[string]int{"n5": 2, "n1": 0},
		isPublished: map[string]bool{"v5": true, "v1": false},
		pubs:        map[[2]string]*Publication{{"v5", "n5"}: {VolumeID: "v5", NodeID: "n5", Readonly: true}},
	})
}

func TestMounts(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	stage := &Mount{VolumeID: "v1", Path: "/stage/v1", Staging: true, Mounted: true}
	pub := &Mount{VolumeID: "v1", Path: "/pods/a/v1", Readonly: true, Block: true}
	other := &Mount{VolumeID: "v10", Path: "/pods/b/v10", Mounted: true}
	mustUpdate(t, s, func(tx *Tx) { tx.PutMount(stage); tx.PutMount(pub); tx.PutMount(other) })

	mountsOf := func(s *Store, vol string) []*Mount {
		var out []*Mount
		s.View(func(r Reader) {
			for _, m := range r.MountsOf(vol) {
				out = append(out, m)
			}
		})
		return out
	}
	tests := []struct {
		vol  string
		want []*Mount
	}{
		// Ordered by path; v1's prefix must not pick up v10's mounts.
		{"v1", []*Mount{pub, stage}},
		{"v10", []*Mount{other}},
		{"v", nil},
		{"v2", nil},
	}
	for _, tc := range tests {
		if got := mountsOf(s, tc.vol); !equal(got, tc.want) {
			t.Errorf("MountsOf(%s) = %+v, want %+v", tc.vol, got, tc.want)
		}
	}
	s.View(func(r Reader) {
		if got := r.Mount("v1", "/stage/v1"); !equal(got, stage) {
			t.Errorf("Mount(v1, /stage/v1) = %+v", got)
		}
		if got := r.Mount("v1", "/pods/b/v10"); got != nil {
			t.Errorf("Mount(v1, /pods/b/v10) = %+v, want nil", got)
		}
	})

	mustUpdate(t, s, func(tx *Tx) { tx.DeleteMount("v1", "/pods/a/v1") })
	if got := mountsOf(s, "v1"); !equal(got, []*Mount{stage}) {
		t.Errorf("MountsOf(v1) after delete = %+v", got)
	}
	s = reopen(t, s, dir)
	if got := mountsOf(s, "v1"); !equal(got, []*Mount{stage}) {
		t.Errorf("MountsOf(v1) after reopen = %+v", got)
	}
	if got := mountsOf(s, "v10"); !equal(got, []*Mount{other}) {
		t.Errorf("MountsOf(v10) after reopen = %+v", got)
	}
}

func TestUsageAccounting(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	steps := []struct {
		name string
		fn   func(tx *Tx)
		want map[string]Usage
	}{
		{"put v1", func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z1", 10)) },
			map[string]Usage{"z1": {Bytes: 10}, "z2": {}}},
		{"put v2 same zone", func(tx *Tx) { tx.PutVolume(vol("v2", "n2", "z1", 5)) },
			map[string]Usage{"z1": {Bytes: 15}}},
		{"put v3 other zone", func(tx *Tx) { tx.PutVolume(vol("v3", "n3", "z2", 7)) },
			map[string]Usage{"z1": {Bytes: 15}, "z2": {Bytes: 7}}},
		{"grow v1", func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z1", 25)) },
			map[string]Usage{"z1": {Bytes: 30}, "z2": {Bytes: 7}}},
		{"grow v1 again via copy of the live record", func(tx *Tx) {
			grown := *tx.Volume("v1")
			grown.CapacityBytes = 40
			tx.PutVolume(&grown)
		}, map[string]Usage{"z1": {Bytes: 45}}},
		{"move v2 to z2", func(tx *Tx) { tx.PutVolume(vol("v2", "n2", "z2", 5)) },
			map[string]Usage{"z1": {Bytes: 40}, "z2": {Bytes: 12}}},
		{"snapshot with two copies", func(tx *Tx) { tx.PutSnapshot(snap("s1", "sn1", "v1", "z1", "z2")) },
			map[string]Usage{"z1": {Bytes: 40, Snapshots: 1}, "z2": {Bytes: 12, Snapshots: 1}}},
		{"snapshot with one copy", func(tx *Tx) { tx.PutSnapshot(snap("s2", "sn2", "v1", "z1")) },
			map[string]Usage{"z1": {Bytes: 40, Snapshots: 2}, "z2": {Bytes: 12, Snapshots: 1}}},
		{"replace snapshot copies", func(tx *Tx) { tx.PutSnapshot(snap("s1", "sn1", "v1", "z3")) },
			map[string]Usage{"z1": {Bytes: 40, Snapshots: 1}, "z2": {Bytes: 12}, "z3": {Snapshots: 1}}},
		{"delete v1", func(tx *Tx) { tx.DeleteVolume("v1") },
			map[string]Usage{"z1": {Snapshots: 1}, "z2": {Bytes: 12}}},
		{"delete s1", func(tx *Tx) { tx.DeleteSnapshot("s1") },
			map[string]Usage{"z1": {Snapshots: 1}, "z3": {}}},
		{"delete unknown", func(tx *Tx) { tx.DeleteVolume("nope"); tx.DeleteSnapshot("nope") },
			map[string]Usage{"z1": {Snapshots: 1}, "z2": {Bytes: 12}, "z3": {}}},
		{"put and delete in one update", func(tx *Tx) { tx.PutVolume(vol("v9", "n9", "z3", 99)); tx.DeleteVolume("v9") },
			map[string]Usage{"z3": {}}},
		{"delete then recreate in one update", func(tx *Tx) { tx.DeleteVolume("v3"); tx.PutVolume(vol("v3", "n3", "z2", 3)) },
			map[string]Usage{"z2": {Bytes: 8}}},
		{"two copies in one zone", func(tx *Tx) { tx.PutSnapshot(snap("s3", "sn3", "v2", "z4", "z4")) },
			map[string]Usage{"z4": {Snapshots: 2}}},
	}
	final := map[string]Usage{}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			mustUpdate(t, s, st.fn)
			for zone, want := range st.want {
				if got := s.ZoneUsage(zone); got != want {
					t.Errorf("ZoneUsage(%s) = %+v, want %+v", zone, got, want)
				}
				s.View(func(r Reader) {
					if got := r.Usage(zone); got != want {
						t.Errorf("Tx.Usage(%s) = %+v, want %+v", zone, got, want)
					}
				})
				final[zone] = want
			}
		})
	}
	if len(final) != 4 {
		t.Fatalf("steps touched %d zones, want 4", len(final))
	}
	s = reopen(t, s, dir)
	for zone, want := range final {
		if got := s.ZoneUsage(zone); got != want {
			t.Errorf("after reopen ZoneUsage(%s) = %+v, want %+v", zone, got, want)
		}
	}
	if got := s.ZoneUsage("never-used"); got != (Usage{}) {
		t.Errorf("ZoneUsage(never-used) = %+v", got)
	}
}

func TestUpdateErrorWritesNothing(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		fn   func(tx *Tx) error
		err  error
	}{
		{"put volume", func(tx *Tx) error { tx.PutVolume(vol("new", "new", "z1", 100)); return errBoom }, errBoom},
		{"replace volume", func(tx *Tx) error { tx.PutVolume(vol("v1", "renamed", "z2", 500)); return errBoom }, errBoom},
		{"delete volume", func(tx *Tx) error { tx.DeleteVolume("v1"); return errBoom }, errBoom},
		{"snapshot", func(tx *Tx) error {
			tx.PutSnapshot(snap("s2", "sn2", "v1", "z1"))
			tx.DeleteSnapshot("s1")
			return errBoom
		}, errBoom},
		{"publication and mount", func(tx *Tx) error {
			tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "n2"})
			tx.DeletePublication("v1", "n1")
			tx.PutMount(&Mount{VolumeID: "v1", Path: "/q"})
			tx.DeleteMount("v1", "/p")
			return status.Error(codes.OutOfRange, "full")
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			mustUpdate(t, s, func(tx *Tx) {
				tx.PutVolume(vol("v1", "n1", "z1", 10))
				tx.PutSnapshot(snap("s1", "sn1", "v1", "z1"))
				tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "n1"})
				tx.PutMount(&Mount{VolumeID: "v1", Path: "/p"})
			})
			err := s.Update(tc.fn)
			if tc.err != nil && err != tc.err {
				t.Fatalf("Update error = %v, want the fn's error %v returned as is", err, tc.err)
			}
			if tc.err == nil && status.Code(err) != codes.OutOfRange {
				t.Fatalf("Update error = %v, want the fn's OutOfRange status", err)
			}
			check := func(when string, s *Store) {
				if got := s.Volume("v1"); !equal(got, vol("v1", "n1", "z1", 10)) {
					t.Errorf("%s: Volume(v1) = %+v", when, got)
				}
				if got := s.VolumeByName("renamed"); got != nil {
					t.Errorf("%s: VolumeByName(renamed) = %+v", when, got)
				}
				if got := volumeIDs(mustList(s)); !equal(got, []string{"v1"}) {
					t.Errorf("%s: ListVolumes = %v", when, got)
				}
				if got, _ := s.ListSnapshots("", 0, ""); !equal(snapshotIDs(got), []string{"s1"}) {
					t.Errorf("%s: ListSnapshots = %v", when, snapshotIDs(got))
				}
				if got := s.ZoneUsage("z1"); got != (Usage{Bytes: 10, Snapshots: 1}) {
					t.Errorf("%s: ZoneUsage(z1) = %+v", when, got)
				}
				if got := s.ZoneUsage("z2"); got != (Usage{}) {
					t.Errorf("%s: ZoneUsage(z2) = %+v", when, got)
				}
				if got := s.PublishedNodes("v1"); !equal(got, []string{"n1"}) {
					t.Errorf("%s: PublishedNodes(v1) = %v", when, got)
				}
				s.View(func(r Reader) {
					if r.Volume("new") != nil || r.Snapshot("s2") != nil || r.Publication("v1", "n2") != nil || r.Mount("v1", "/q") != nil {
						t.Errorf("%s: a write of the failed Update is in the writer's view", when)
					}
					if r.Snapshot("s1") == nil || r.Publication("v1", "n1") == nil || r.Mount("v1", "/p") == nil {
						t.Errorf("%s: a delete of the failed Update is in the writer's view", when)
					}
					if got := r.PublishedVolumes("n1"); got != 1 {
						t.Errorf("%s: PublishedVolumes(n1) = %d, want 1", when, got)
					}
					if got := r.PublishedVolumes("n2"); got != 0 {
						t.Errorf("%s: PublishedVolumes(n2) = %d, want 0", when, got)
					}
				})
			}
			check("in memory", s)
			// A later successful Update must not flush the failed one's writes.
			mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("later", "later", "z9", 1)) })
			s = reopen(t, s, dir)
			s.View(func(r Reader) {
				if r.Volume("later") == nil {
					t.Errorf("volume of the later Update missing after reopen")
				}
			})
			mustUpdate(t, s, func(tx *Tx) { tx.DeleteVolume("later") })
			check("after reopen", s)
		})
	}
}

func TestUpdateWithoutWrites(t *testing.T) {
	s := openStore(t, t.TempDir())
	called := 0
	if err := s.Update(func(tx *Tx) error { called++; return nil }); err != nil {
		t.Fatalf("Update without writes: %v", err)
	}
	if called != 1 {
		t.Fatalf("fn called %d times, want 1", called)
	}
	if vs, next := s.ListVolumes("", 0); len(vs) != 0 || next != "" {
		t.Errorf("empty store ListVolumes = %v, %q", volumeIDs(vs), next)
	}
}

func TestClose(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, s, func(tx *Tx) { tx.PutVolume(vol("v1", "n1", "z", 1)) })
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	called := false
	err = s.Update(func(tx *Tx) error { called = true; tx.PutVolume(vol("v2", "n2", "z", 1)); return nil })
	if status.Code(err) != codes.Unavailable {
		t.Errorf("Update after Close = %v, want Unavailable", err)
	}
	if called {
		t.Errorf("Update after Close ran its fn")
	}
	// Reads keep working from memory after Close.
	if v := s.Volume("v1"); v == nil || v.Name != "n1" {
		t.Errorf("Volume(v1) after Close = %+v", v)
	}
	s2 := openStore(t, dir)
	if v := s2.Volume("v2"); v != nil {
		t.Errorf("v2 written after Close: %+v", v)
	}
}

func TestListVolumesPaging(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustUpdate(t, s, func(tx *Tx) {
		// Inserted out of order; IDs sort vol-1 < vol-2 < ... < vol-6.
		for _, i := range []int{4, 1, 6, 3, 2, 5} {
			tx.PutVolume(vol(fmt.Sprintf("vol-%d", i), fmt.Sprintf("n%d", i), "z", int64(i)))
		}
	})
	mustUpdate(t, s, func(tx *Tx) { tx.DeleteVolume("vol-3") })
	// Five volumes remain: vol-1 vol-2 vol-4 vol-5 vol-6.
	tests := []struct {
		from     string
		max      int
		want     []string
		wantNext string
	}{
		{"", 2, []string{"vol-1", "vol-2"}, "vol-4"},
		{"vol-4", 2, []string{"vol-4", "vol-5"}, "vol-6"},
		{"vol-6", 2, []string{"vol-6"}, ""},
		{"", 0, []string{"vol-1", "vol-2", "vol-4", "vol-5", "vol-6"}, ""},
		{"", -1, []string{"vol-1", "vol-2", "vol-4", "vol-5", "vol-6"}, ""},
		{"", 5, []string{"vol-1", "vol-2", "vol-4", "vol-5", "vol-6"}, ""},
		{"", 4, []string{"vol-1", "vol-2", "vol-4", "vol-5"}, "vol-6"},
		{"", 1, []string{"vol-1"}, "vol-2"},
		{"vol-3", 2, []string{"vol-4", "vol-5"}, "vol-6"}, // from a deleted key
		{"vol-2a", 0, []string{"vol-4", "vol-5", "vol-6"}, ""},
		{"vol-0", 1, []string{"vol-1"}, "vol-2"},
		{"vol-7", 2, []string{}, ""},
		{"zzz", 0, []string{}, ""},
	}
	for _, tc := range tests {
		got, next := s.ListVolumes(tc.from, tc.max)
		if !equal(volumeIDs(got), tc.want) || next != tc.wantNext {
			t.Errorf("ListVolumes(%q, %d) = %v, %q; want %v, %q", tc.from, tc.max, volumeIDs(got), next, tc.want, tc.wantNext)
		}
	}

	// Walking pages of 2 visits every volume once.
	var all []string
	from := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatalf("paging did not end: %v", all)
		}
		got, next := s.ListVolumes(from, 2)
		all = append(all, volumeIDs(got)...)
		if next == "" {
			if pages != 2 {
				t.Errorf("walked %d pages, want 3", pages+1)
			}
			break
		}
		from = next
	}
	if !equal(all, []string{"vol-1", "vol-2", "vol-4", "vol-5", "vol-6"}) {
		t.Errorf("pages of 2 = %v", all)
	}
	// The listed records carry their fields.
	got, _ := s.ListVolumes("vol-5", 1)
	if len(got) != 1 || got[0].Name != "n5" || got[0].CapacityBytes != 5 || got[0].Zone != "z" {
		t.Errorf("ListVolumes(vol-5, 1) = %+v", got)
	}
}

func TestListSnapshots(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustUpdate(t, s, func(tx *Tx) {
		tx.PutSnapshot(snap("s1", "n1", "v1", "z"))
		tx.PutSnapshot(snap("s2", "n2", "v2", "z"))
		tx.PutSnapshot(snap("s3", "n3", "v1", "z"))
		tx.PutSnapshot(snap("s4", "n4", "v1", "z"))
		tx.PutSnapshot(snap("s5", "n5", "v2", "z"))
		tx.PutSnapshot(snap("s6", "n6", "v3", "z"))
	})
	mustUpdate(t, s, func(tx *Tx) { tx.DeleteSnapshot("s6") })
	tests := []struct {
		from     string
		max      int
		source   string
		want     []string
		wantNext string
	}{
		{"", 0, "", []string{"s1", "s2", "s3", "s4", "s5"}, ""},
		{"", 3, "", []string{"s1", "s2", "s3"}, "s4"},
		{"s4", 3, "", []string{"s4", "s5"}, ""},
		{"", 2, "v1", []string{"s1", "s3"}, "s4"},
		{"s4", 2, "v1", []string{"s4"}, ""},
		{"s2", 0, "v1", []string{"s3", "s4"}, ""},
		{"s2", 1, "v1", []string{"s3"}, "s4"},
		{"", 0, "v2", []string{"s2", "s5"}, ""},
		{"", 1, "v2", []string{"s2"}, "s5"},
		{"s3", 0, "v2", []string{"s5"}, ""},
		{"", 0, "v3", []string{}, ""}, // its only snapshot was deleted
		{"", 0, "nope", []string{}, ""},
		{"s9", 0, "v1", []string{}, ""},
		{"s9", 0, "", []string{}, ""},
	}
	for _, tc := range tests {
		got, next := s.ListSnapshots(tc.from, tc.max, tc.source)
		if !equal(snapshotIDs(got), tc.want) || next != tc.wantNext {
			t.Errorf("ListSnapshots(%q, %d, %q) = %v, %q; want %v, %q", tc.from, tc.max, tc.source, snapshotIDs(got), next, tc.want, tc.wantNext)
		}
		for _, sn := range got {
			if tc.source != "" && sn.SourceVolume != tc.source {
				t.Errorf("ListSnapshots(source %q) returned %s of %s", tc.source, sn.ID, sn.SourceVolume)
			}
		}
	}
}

// TestListPublishedVolumes: each listed volume carries the nodes
// PublishedNodes gives for it, page by page, as publications change.
func TestListPublishedVolumes(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustUpdate(t, s, func(tx *Tx) {
		for _, id := range []string{"v1", "v2", "v3"} {
			tx.PutVolume(vol(id, "name-"+id, "zone-a", 1))
		}
		tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "n1"})
		tx.PutPublication(&Publication{VolumeID: "v1", NodeID: "n2"})
		tx.PutPublication(&Publication{VolumeID: "v2", NodeID: "n1"})
	})
	type page struct {
		nodes map[string][]string
		next  string
	}
	for _, tt := range []struct {
		name   string
		change func(tx *Tx)
		pages  []page // of max 2
	}{
		{"published", func(*Tx) {}, []page{{map[string][]string{"v1": {"n1", "n2"}, "v2": {"n1"}}, "v3"}, {map[string][]string{"v3": nil}, ""}}},
		{"unpublished", func(tx *Tx) { tx.DeletePublication("v1", "n2") }, []page{{map[string][]string{"v1": {"n1"}, "v2": {"n1"}}, "v3"}, {map[string][]string{"v3": nil}, ""}}},
		{"v3 published, v2 deleted", func(tx *Tx) {
			tx.PutPublication(&Publication{VolumeID: "v3", NodeID: "n3"})
			tx.DeletePublication("v2", "n1")
			tx.DeleteVolume("v2")
		}, []page{{map[string][]string{"v1": {"n1"}, "v3": {"n3"}}, ""}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mustUpdate(t, s, tt.change)
			from := ""
			for i, want := range tt.pages {
				vols, next := s.ListPublishedVolumes(from, 2)
				got := map[string][]string{}
				for _, v := range vols {
					got[v.ID] = sorted(v.Nodes)
					if ref := sorted(s.PublishedNodes(v.ID)); !equal(got[v.ID], ref) {
						t.Errorf("page %d: %s has nodes %v, PublishedNodes %v", i, v.ID, got[v.ID], ref)
					}
				}
				if !cmp.Equal(got, want.nodes, cmpopts.EquateEmpty()) || next != want.next {
					t.Errorf("page %d from %q: %v, next %q; want %v, next %q", i, from, got, next, want.nodes, want.next)
				}
				from = next
			}
		})
	}
}
