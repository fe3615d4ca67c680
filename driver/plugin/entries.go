package plugin

import (
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/state"
)

// entryCache holds each snapshot's ListSnapshotsResponse.Entry encoded
// once. A complete listing of 10k snapshots otherwise spends most of its
// CPU rebuilding and re-encoding the same immutable entries (the map in
// accessible_topology is the costliest field to encode); with the cache a
// page is a concatenation of bytes. Records never change once stored, so
// an entry is valid for as long as the record pointer it was built from
// is the one the store returns.
type entryCache struct {
	mu      sync.RWMutex
	entries map[string]cachedEntry
}

type cachedEntry struct {
	record *state.Snapshot
	data   []byte
}

// listEntriesField is ListSnapshotsResponse.entries' field number.
const listEntriesField protowire.Number = 1

func newEntryCache() *entryCache { return &entryCache{entries: map[string]cachedEntry{}} }

// encoded returns s's encoded entry, building it on first use.
func (c *entryCache) encoded(s *state.Snapshot, render func(*state.Snapshot) *csi.Snapshot) []byte {
	c.mu.RLock()
	e, ok := c.entries[s.ID]
	c.mu.RUnlock()
	if ok && e.record == s {
		return e.data
	}
	data, err := proto.Marshal(&csi.ListSnapshotsResponse_Entry{Snapshot: render(s)})
	if err != nil {
		panic(err) // a message built from plain fields always encodes
	}
	c.mu.Lock()
	c.entries[s.ID] = cachedEntry{record: s, data: data}
	c.mu.Unlock()
	return data
}

func (c *entryCache) forget(id string) {
	c.mu.Lock()
	delete(c.entries, id)
	c.mu.Unlock()
}

// listResponse builds a ListSnapshotsResponse whose entries are the
// cached encodings, carried as raw field data: on the wire it is the same
// message as one with decoded entries.
func (c *entryCache) listResponse(snaps []*state.Snapshot, next string, render func(*state.Snapshot) *csi.Snapshot) *csi.ListSnapshotsResponse {
	encoded := make([][]byte, len(snaps))
	size := 0
	for i, s := range snaps {
		encoded[i] = c.encoded(s, render)
		size += protowire.SizeTag(listEntriesField) + protowire.SizeBytes(len(encoded[i]))
	}
	raw := make([]byte, 0, size)
	for _, e := range encoded {
		raw = protowire.AppendTag(raw, listEntriesField, protowire.BytesType)
		raw = protowire.AppendBytes(raw, e)
	}
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	resp.ProtoReflect().SetUnknown(raw)
	return resp
}
