package state

import (
	"encoding/json"
)

// Reader is the writer's view, read-only: it sees every write of earlier
// Updates, durable or not (they are ordered before any later one). Store.View
// hands out a Reader, not a Tx, so that a check cannot stage a write that
// nothing would ever apply: Reader has no method that writes. The records
// it returns are the store's own, as Store's read methods' are: change a
// copy and Put it in an Update, never the record itself.
type Reader struct {
	s *Store
}

// Tx is the writer's view inside Store.Update: a Reader plus writes, which
// are staged and applied only when the Update's function succeeds.
type Tx struct {
	Reader
	writes []staged
	// staged counts, per zone, the copies of snapshots this Tx creates,
	// so that Usage sees them before they are applied: a group snapshot
	// places all its members in one Tx, each against the zone's quota.
	staged map[string]int64
}

type staged struct {
	bucket []byte
	key    string
	value  []byte
	apply  func(seq uint64)
}

func stagePut[T any](tx *Tx, t *table[T], r *T) {
	data, err := json.Marshal(r)
	if err != nil {
		panic(err) // records are plain structs: cannot fail
	}
	tx.writes = append(tx.writes, staged{bucket: t.bucket, key: t.key(r), value: data, apply: func(seq uint64) { t.put(r, seq) }})
}

func stageDelete[T any](tx *Tx, t *table[T], key string) {
	tx.writes = append(tx.writes, staged{bucket: t.bucket, key: key, apply: func(seq uint64) { t.delete(key, seq) }})
}

// Volume returns the live volume with the given ID, or nil.
func (r Reader) Volume(id string) *Volume { return r.s.volumes.live(id) }

// VolumeByName returns the live volume with the given name, or nil.
func (r Reader) VolumeByName(name string) *Volume {
	return named(r.s.volumes.live(r.s.volumeNames[name]), name, volumeName)
}

// Snapshot returns the live snapshot with the given ID, or nil.
func (r Reader) Snapshot(id string) *Snapshot { return r.s.snapshots.live(id) }

// SnapshotByName returns the live snapshot with the given name, or nil.
func (r Reader) SnapshotByName(name string) *Snapshot {
	return named(r.s.snapshots.live(r.s.snapshotNames[name]), name, snapshotName)
}

// Usage returns what a zone holds, counting writes not yet durable.
func (r Reader) Usage(zone string) Usage {
	if u := r.s.usage[zone]; u != nil {
		return *u
	}
	return Usage{}
}

// Usage is Reader.Usage plus the snapshots this Tx has put so far.
func (tx *Tx) Usage(zone string) Usage {
	u := tx.Reader.Usage(zone)
	u.Snapshots += tx.staged[zone]
	return u
}

// Publication returns the publication of a volume to a node, or nil.
func (r Reader) Publication(volumeID, nodeID string) *Publication {
	return r.s.publications.live(volumeID + "\x00" + nodeID)
}

// PublishedVolumes counts the volumes published to a node.
func (r Reader) PublishedVolumes(nodeID string) int { return r.s.pubsPerNode[nodeID] }

// IsPublished reports whether a volume is published to any node.
func (r Reader) IsPublished(volumeID string) bool {
	for _, p := range r.s.pubsByVolume[volumeID] {
		if p.vis.live() {
			return true
		}
	}
	return false
}

// PublicationsOf returns the volume's live publications, in no order.
func (r Reader) PublicationsOf(volumeID string) []*Publication {
	var out []*Publication
	for _, p := range r.s.pubsByVolume[volumeID] {
		if p.vis.live() {
			out = append(out, p)
		}
	}
	return out
}

// HasSnapshots reports whether any live snapshot was cut from the volume.
func (r Reader) HasSnapshots(volumeID string) bool {
	for id := range r.s.bySource[volumeID] {
		if s := r.s.snapshots.live(id); s != nil && s.SourceVolume == volumeID {
			return true
		}
	}
	return false
}

// Mount returns the node-side mount of a volume at a path, or nil.
func (r Reader) Mount(volumeID, path string) *Mount {
	return r.s.mounts.live(volumeID + "\x00" + path)
}

// MountsOf returns the live node-side mounts of a volume.
func (r Reader) MountsOf(volumeID string) []*Mount {
	var out []*Mount
	prefix := volumeID + "\x00"
	r.s.mounts.order.AscendGreaterOrEqual(prefix, func(k string) bool {
		if len(k) < len(prefix) || k[:len(prefix)] != prefix {
			return false
		}
		if m := r.s.mounts.live(k); m != nil {
			out = append(out, m)
		}
		return true
	})
	return out
}

// PutVolume creates or replaces a volume.
func (tx *Tx) PutVolume(v *Volume) { stagePut(tx, tx.s.volumes, v) }

// DeleteVolume deletes a volume.
func (tx *Tx) DeleteVolume(id string) { stageDelete(tx, tx.s.volumes, id) }

// PutSnapshot creates or replaces a snapshot.
func (tx *Tx) PutSnapshot(v *Snapshot) {
	if tx.Snapshot(v.ID) == nil {
		if tx.staged == nil {
			tx.staged = map[string]int64{}
		}
		for _, z := range v.Zones {
			tx.staged[z]++
		}
	}
	stagePut(tx, tx.s.snapshots, v)
}

// DeleteSnapshot deletes a snapshot.
func (tx *Tx) DeleteSnapshot(id string) { stageDelete(tx, tx.s.snapshots, id) }

// Group returns the live group snapshot with the given ID, or nil.
func (r Reader) Group(id string) *Group { return r.s.groups.live(id) }

// GroupByName returns the live group snapshot with the given name, or nil.
func (r Reader) GroupByName(name string) *Group {
	return named(r.s.groups.live(r.s.groupNames[name]), name, groupName)
}

// PutGroup creates or replaces a group snapshot; its members are put
// with PutSnapshot in the same Update.
func (tx *Tx) PutGroup(g *Group) { stagePut(tx, tx.s.groups, g) }

// DeleteGroup deletes a group snapshot record, not its members.
func (tx *Tx) DeleteGroup(id string) { stageDelete(tx, tx.s.groups, id) }

// PutPublication records a ControllerPublish.
func (tx *Tx) PutPublication(p *Publication) { stagePut(tx, tx.s.publications, p) }

// DeletePublication forgets a ControllerPublish.
func (tx *Tx) DeletePublication(volumeID, nodeID string) {
	stageDelete(tx, tx.s.publications, volumeID+"\x00"+nodeID)
}

// PutMount records a node-side stage or publish.
func (tx *Tx) PutMount(m *Mount) { stagePut(tx, tx.s.mounts, m) }

// DeleteMount forgets a node-side stage or publish.
func (tx *Tx) DeleteMount(volumeID, path string) { stageDelete(tx, tx.s.mounts, volumeID+"\x00"+path) }
