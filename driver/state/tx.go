package state

import (
	"encoding/json"
)

// Tx is the writer's view inside Store.Update. Reads see every write of
// earlier Updates, durable or not (they are ordered before this one);
// writes are staged and applied only when the Update's function succeeds.
type Tx struct {
	s      *Store
	writes []staged
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
func (tx *Tx) Volume(id string) *Volume { return tx.s.volumes.live(id) }

// VolumeByName returns the live volume with the given name, or nil.
func (tx *Tx) VolumeByName(name string) *Volume {
	if v := tx.s.volumes.live(tx.s.volumeNames[name]); v != nil && v.Name == name {
		return v
	}
	return nil
}

// Snapshot returns the live snapshot with the given ID, or nil.
func (tx *Tx) Snapshot(id string) *Snapshot { return tx.s.snapshots.live(id) }

// SnapshotByName returns the live snapshot with the given name, or nil.
func (tx *Tx) SnapshotByName(name string) *Snapshot {
	if v := tx.s.snapshots.live(tx.s.snapshotNames[name]); v != nil && v.Name == name {
		return v
	}
	return nil
}

// The name and source indexes keep entries until a deletion or rename is
// durable, for readers; the writer's lookups check the row still matches.

// Usage returns what a zone holds, counting writes not yet durable.
func (tx *Tx) Usage(zone string) Usage {
	if u := tx.s.usage[zone]; u != nil {
		return *u
	}
	return Usage{}
}

// Publication returns the publication of a volume to a node, or nil.
func (tx *Tx) Publication(volumeID, nodeID string) *Publication {
	return tx.s.publications.live(volumeID + "\x00" + nodeID)
}

// PublishedNodes counts the volumes published to a node.
func (tx *Tx) PublishedVolumes(nodeID string) int { return tx.s.pubsPerNode[nodeID] }

// IsPublished reports whether a volume is published to any node.
func (tx *Tx) IsPublished(volumeID string) bool {
	for _, p := range tx.s.pubsByVolume[volumeID] {
		if p.vis.live() {
			return true
		}
	}
	return false
}

// HasSnapshots reports whether any live snapshot was cut from the volume.
func (tx *Tx) HasSnapshots(volumeID string) bool {
	for id := range tx.s.bySource[volumeID] {
		if s := tx.s.snapshots.live(id); s != nil && s.SourceVolume == volumeID {
			return true
		}
	}
	return false
}

// Mount returns the node-side mount of a volume at a path, or nil.
func (tx *Tx) Mount(volumeID, path string) *Mount {
	return tx.s.mounts.live(volumeID + "\x00" + path)
}

// MountsOf returns the live node-side mounts of a volume.
func (tx *Tx) MountsOf(volumeID string) []*Mount {
	var out []*Mount
	prefix := volumeID + "\x00"
	tx.s.mounts.order.AscendGreaterOrEqual(prefix, func(k string) bool {
		if len(k) < len(prefix) || k[:len(prefix)] != prefix {
			return false
		}
		if m := tx.s.mounts.live(k); m != nil {
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
func (tx *Tx) PutSnapshot(v *Snapshot) { stagePut(tx, tx.s.snapshots, v) }

// DeleteSnapshot deletes a snapshot.
func (tx *Tx) DeleteSnapshot(id string) { stageDelete(tx, tx.s.snapshots, id) }

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
