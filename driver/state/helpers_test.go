package state

import (
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// openStore opens a store in dir and closes it when the test ends.
func openStore(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func reopen(t testing.TB, s *Store, dir string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openStore(t, dir)
}

func mustUpdate(t testing.TB, s *Store, fn func(tx *Tx)) {
	t.Helper()
	if err := s.Update(func(tx *Tx) error { fn(tx); return nil }); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

var created = time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC)

func vol(id, name, zone string, capacity int64) *Volume {
	return &Volume{ID: id, Name: name, Zone: zone, CapacityBytes: capacity, Created: created}
}

func snap(id, name, source string, zones ...string) *Snapshot {
	return &Snapshot{ID: id, Name: name, SourceVolume: source, SizeBytes: 100, Zones: zones, Created: created}
}

// finder is what Store (durable records) and Reader (the writer's view)
// both answer, so that a test can ask both the same questions.
type finder interface {
	Volume(id string) *Volume
	VolumeByName(name string) *Volume
	Snapshot(id string) *Snapshot
	SnapshotByName(name string) *Snapshot
}

// ignoreVisibility compares records without their visibility bookkeeping,
// which differs between a fresh write and a record loaded from disk.
var ignoreVisibility = cmpopts.IgnoreUnexported(Volume{}, Snapshot{}, Publication{}, Mount{}, Group{})

func volumeIDs(vs []*Volume) []string { return ids(vs, func(v *Volume) string { return v.ID }) }

func snapshotIDs(vs []*Snapshot) []string { return ids(vs, func(v *Snapshot) string { return v.ID }) }

// ids lists the IDs of records, [] rather than nil for none.
func ids[T any](rs []*T, id func(*T) string) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, id(r))
	}
	return out
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

func equal(a, b any) bool { return cmp.Equal(a, b, ignoreVisibility) }
