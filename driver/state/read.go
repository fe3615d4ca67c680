package state

import "sort"

// The read methods serve from memory and see only durable records.

// Volume returns a durable volume, or nil.
func (s *Store) Volume(id string) *Volume { return byID(s, s.volumes, id) }

// Snapshot returns a durable snapshot, or nil.
func (s *Store) Snapshot(id string) *Snapshot { return byID(s, s.snapshots, id) }

// ListVolumes returns up to max volumes with ID >= from, in ID order,
// and the ID to start the next page at ("" at the end). max <= 0 means all.
func (s *Store) ListVolumes(from string, max int) ([]*Volume, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return page(s.volumes, from, max, s.durable, func(*Volume) bool { return true })
}

// ListVolumesWhere is ListVolumes of the volumes keep accepts; keep runs
// under the store's read lock and must not call the store.
func (s *Store) ListVolumesWhere(from string, max int, keep func(*Volume) bool) ([]*Volume, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return page(s.volumes, from, max, s.durable, keep)
}

// PublishedVolume is a listed volume and the nodes it is published to.
type PublishedVolume struct {
	*Volume
	Nodes []string
}

// ListPublishedVolumes is ListVolumes with each volume's published
// nodes, all read under one lock: ListVolumes reports both, and taking
// the lock once per entry costs as much as the rest of the page.
func (s *Store) ListPublishedVolumes(from string, max int) ([]PublishedVolume, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	vols, next := page(s.volumes, from, max, s.durable, func(*Volume) bool { return true })
	out := make([]PublishedVolume, len(vols))
	for i, v := range vols {
		out[i] = PublishedVolume{Volume: v, Nodes: s.publishedNodes(v.ID)}
	}
	return out, next
}

// ListSnapshots is ListVolumes for snapshots; sourceVolume, when set,
// restricts the list to snapshots of that volume.
func (s *Store) ListSnapshots(from string, max int, sourceVolume string) ([]*Snapshot, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sourceVolume == "" {
		return page(s.snapshots, from, max, s.durable, func(*Snapshot) bool { return true })
	}
	// Walk the volume's own snapshots, not all of them: a CO lists by
	// source volume routinely, and a volume has few snapshots.
	ids := make([]string, 0, len(s.bySource[sourceVolume]))
	for id := range s.bySource[sourceVolume] {
		if id >= from {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var out []*Snapshot
	for _, id := range ids {
		v := s.snapshots.visible(id, s.durable)
		if v == nil || v.SourceVolume != sourceVolume {
			continue
		}
		if max > 0 && len(out) == max {
			return out, id
		}
		out = append(out, v)
	}
	return out, ""
}

// PublishedNodes returns the nodes a durable volume is published to.
func (s *Store) PublishedNodes(volumeID string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.publishedNodes(volumeID)
}

// publishedNodes is PublishedNodes with s.mu held.
func (s *Store) publishedNodes(volumeID string) []string {
	var out []string
	for node, p := range s.pubsByVolume[volumeID] {
		if s.publications.visible(pubKey(p), s.durable) != nil {
			out = append(out, node)
		}
	}
	return out
}

// ZoneUsage returns what a zone holds, including writes being committed.
func (s *Store) ZoneUsage(zone string) Usage {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if u := s.usage[zone]; u != nil {
		return *u
	}
	return Usage{}
}

func page[T any](t *table[T], from string, max int, durable uint64, keep func(*T) bool) ([]*T, string) {
	var out []*T
	next := ""
	t.ascend(from, durable, func(r *T) bool {
		if !keep(r) {
			return true
		}
		if max > 0 && len(out) == max {
			next = t.key(r)
			return false
		}
		out = append(out, r)
		return true
	})
	return out, next
}

// VolumeByName returns a durable volume by name, or nil.
func (s *Store) VolumeByName(name string) *Volume {
	return byName(s, s.volumes, s.volumeNames, name, volumeName)
}

// SnapshotByName returns a durable snapshot by name, or nil.
func (s *Store) SnapshotByName(name string) *Snapshot {
	return byName(s, s.snapshots, s.snapshotNames, name, snapshotName)
}

// byID is the durable row of t under id, or nil, read under s.mu.
func byID[T any](s *Store, t *table[T], id string) *T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return t.visible(id, s.durable)
}

// byName is the durable row of t that names, one of s's name indexes,
// holds for name, or nil, read under s.mu.
func byName[T any](s *Store, t *table[T], names map[string]string, name string, nameOf func(*T) string) *T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return named(t.visible(names[name], s.durable), name, nameOf)
}

// named returns r if it is still called name, else nil: the name indexes
// keep an entry until a deletion or rename is durable, for readers, so a
// lookup through them checks the record still matches.
func named[T any](r *T, name string, nameOf func(*T) string) *T {
	if r == nil || nameOf(r) != name {
		return nil
	}
	return r
}

// Group returns a durable group snapshot, or nil.
func (s *Store) Group(id string) *Group { return byID(s, s.groups, id) }

// GroupByName returns a durable group snapshot by name, or nil.
func (s *Store) GroupByName(name string) *Group {
	return byName(s, s.groups, s.groupNames, name, groupName)
}

func volumeName(v *Volume) string     { return v.Name }
func snapshotName(s *Snapshot) string { return s.Name }
func groupName(g *Group) string       { return g.Name }

// View runs fn against the writer's view under the read lock: for checks
// that must see writes still being committed. fn gets a Reader, which
// cannot write; writes go through Update.
func (s *Store) View(fn func(r Reader)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fn(Reader{s: s})
}
