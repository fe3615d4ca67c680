package plugin

import (
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/state"
)

// encodingCache holds each record's list entry encoded once. A complete
// listing of 10k objects otherwise spends most of the driver's CPU
// rebuilding and re-encoding the same entries (the map in
// accessible_topology is the costliest field to encode); with the cache a
// page is a concatenation of bytes. Records never change once stored, so
// an encoding is valid for as long as the record pointer it was built
// from is the one the store returns; a replaced record (a volume grown by
// ControllerExpandVolume) gets a new pointer, and so a new encoding.
type encodingCache[R any] struct {
	mu      sync.RWMutex
	entries map[string]cachedEncoding[R]
	// id and encode make a record's key and its encoding.
	id     func(*R) string
	encode func(*R) proto.Message
}

type cachedEncoding[R any] struct {
	record *R
	data   []byte
}

func newEncodingCache[R any](id func(*R) string, encode func(*R) proto.Message) *encodingCache[R] {
	return &encodingCache[R]{entries: map[string]cachedEncoding[R]{}, id: id, encode: encode}
}

// encodings returns the encoding of each record, building those missing.
// One read lock covers the page: a lock per entry cost more than the
// lookup.
func (c *encodingCache[R]) encodings(records []*R) [][]byte {
	out := make([][]byte, len(records))
	missing := false
	c.mu.RLock()
	for i, r := range records {
		if e, ok := c.entries[c.id(r)]; ok && e.record == r {
			out[i] = e.data
		} else {
			missing = true
		}
	}
	c.mu.RUnlock()
	if !missing {
		return out
	}
	for i, r := range records {
		if out[i] == nil {
			out[i] = c.build(r)
		}
	}
	return out
}

func (c *encodingCache[R]) build(r *R) []byte {
	// Deterministic: map keys in order, so an entry's bytes do not
	// depend on when it was first listed.
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.encode(r))
	if err != nil {
		panic(err) // a message built from plain fields always encodes
	}
	c.mu.Lock()
	c.entries[c.id(r)] = cachedEncoding[R]{record: r, data: data}
	c.mu.Unlock()
	return data
}

// newEncodingCaches returns the caches of ListSnapshots' entries and of
// ListVolumes' volumes, encoded as p renders them.
func (p *Plugin) newEncodingCaches() (*encodingCache[state.Snapshot], *encodingCache[state.Volume]) {
	return newEncodingCache(func(s *state.Snapshot) string { return s.ID },
			func(s *state.Snapshot) proto.Message {
				return &csi.ListSnapshotsResponse_Entry{Snapshot: p.csiSnapshot(s)}
			}),
		newEncodingCache(func(v *state.Volume) string { return v.ID },
			func(v *state.Volume) proto.Message { return p.csiVolume(v) })
}

// forget drops a deleted record's encoding.
func (c *encodingCache[R]) forget(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

// Field numbers of the list responses, for writing them as raw bytes.
const (
	listEntriesField protowire.Number = 1 // List{Volumes,Snapshots}Response.entries
	listNextField    protowire.Number = 2 // List{Volumes,Snapshots}Response.next_token
	entryVolumeField protowire.Number = 1 // ListVolumesResponse.Entry.volume
	entryStatusField protowire.Number = 2 // ListVolumesResponse.Entry.status
	statusNodesField protowire.Number = 1 // ListVolumesResponse.VolumeStatus.published_node_ids
)

// rawList writes a list response: n entries, each of size(i) bytes
// written by put, then next. The result goes into a response's unknown
// fields: on the wire it is the message with decoded entries, byte for
// byte as proto.Marshal writes it, and gRPC marshals it as a copy. Only
// a decoded copy has Entries and NextToken set, so the list methods are
// for gRPC callers; tests decode what they return (entries_test.go).
func rawList(n int, size func(i int) int, put func(b []byte, i int) []byte, next string) []byte {
	total := 0
	for i := range n {
		total += protowire.SizeTag(listEntriesField) + protowire.SizeBytes(size(i))
	}
	if next != "" {
		total += protowire.SizeTag(listNextField) + protowire.SizeBytes(len(next))
	}
	raw := make([]byte, 0, total)
	for i := range n {
		raw = protowire.AppendTag(raw, listEntriesField, protowire.BytesType)
		raw = protowire.AppendVarint(raw, uint64(size(i)))
		raw = put(raw, i)
	}
	if next != "" {
		raw = protowire.AppendTag(raw, listNextField, protowire.BytesType)
		raw = protowire.AppendString(raw, next)
	}
	return raw
}

// snapshotPage is a ListSnapshotsResponse of the cached entries.
func snapshotPage(c *encodingCache[state.Snapshot], snaps []*state.Snapshot, next string) *csi.ListSnapshotsResponse {
	enc := c.encodings(snaps)
	resp := &csi.ListSnapshotsResponse{}
	resp.ProtoReflect().SetUnknown(rawList(len(enc),
		func(i int) int { return len(enc[i]) },
		func(b []byte, i int) []byte { return append(b, enc[i]...) }, next))
	return resp
}

// volumePage is a ListVolumesResponse of the cached volumes, each with a
// status of its published nodes, which change without the volume record
// changing and so are written afresh.
func volumePage(c *encodingCache[state.Volume], vols []state.PublishedVolume, next string) *csi.ListVolumesResponse {
	records := make([]*state.Volume, len(vols))
	for i, v := range vols {
		records[i] = v.Volume
	}
	enc := c.encodings(records)
	status := func(i int) int {
		size := 0
		for _, n := range vols[i].Nodes {
			size += protowire.SizeTag(statusNodesField) + protowire.SizeBytes(len(n))
		}
		return size
	}
	entrySize := func(i int) int {
		return protowire.SizeTag(entryVolumeField) + protowire.SizeBytes(len(enc[i])) +
			protowire.SizeTag(entryStatusField) + protowire.SizeBytes(status(i))
	}
	resp := &csi.ListVolumesResponse{}
	resp.ProtoReflect().SetUnknown(rawList(len(enc), entrySize, func(b []byte, i int) []byte {
		b = protowire.AppendTag(b, entryVolumeField, protowire.BytesType)
		b = protowire.AppendBytes(b, enc[i])
		b = protowire.AppendTag(b, entryStatusField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(status(i)))
		for _, n := range vols[i].Nodes {
			b = protowire.AppendTag(b, statusNodesField, protowire.BytesType)
			b = protowire.AppendString(b, n)
		}
		return b
	}, next))
	return resp
}
