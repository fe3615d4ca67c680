package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Store is the driver's durable state.
type Store struct {
	db *bolt.DB

	mu        sync.RWMutex
	seq       uint64 // last sequence handed to a write, under mu
	durable   uint64 // last sequence synced to disk, under mu
	pending   []write
	failed    error // set when a commit failed: the mirror is ahead of the disk
	committed *sync.Cond
	// beforeCommit runs before each commit; see BeforeCommit.
	beforeCommit func() error
	// volatile skips fsync; see Volatile.
	volatile bool
	wake     chan struct{}
	done     chan struct{}
	closing  bool

	volumes      *table[Volume]
	snapshots    *table[Snapshot]
	publications *table[Publication]
	mounts       *table[Mount]
	groups       *table[Group]

	volumeNames   map[string]string
	snapshotNames map[string]string
	groupNames    map[string]string
	bySource      map[string]map[string]bool // volume ID -> snapshot IDs
	pubsByVolume  map[string]map[string]*Publication
	pubsPerNode   map[string]int
	usage         map[string]*Usage
}

// Usage is what a zone holds, in the writer's view.
type Usage struct {
	Bytes     int64
	Snapshots int64
}

// write is one record put (value != nil) or deleted, tagged with the
// sequence of the Update that made it.
type write struct {
	bucket []byte
	key    string
	value  []byte
	seq    uint64
}

const dbFile = "state.db"

// Option configures a Store at Open.
type Option func(*Store)

// BeforeCommit has every commit call fn first, before the transaction,
// and fail as a commit failure when fn fails. A caller that creates files
// before queueing the records pointing to them makes the files' directory
// entries durable there: once per group commit rather than once per
// request, and always before the records.
func BeforeCommit(fn func() error) Option {
	return func(s *Store) { s.beforeCommit = fn }
}

// Volatile makes a store skip fsync, of its database and of its
// directory: for state thrown away with its process, such as the node
// plugins of a fake cluster's thousands of nodes, which open their stores
// all at once and would wait on their syncs far longer than they work.
// A crash can lose or tear what it committed.
func Volatile() Option {
	return func(s *Store) { s.volatile = true }
}

// Open opens (creating if needed) the store in dir and loads it.
func Open(dir string, opts ...Option) (*Store, error) {
	s := newStore()
	for _, o := range opts {
		o(s)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	db, err := bolt.Open(filepath.Join(dir, dbFile), 0o600, &bolt.Options{
		Timeout:        2 * time.Second,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoSync:         s.volatile,
	})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("state directory %s is in use by another process", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("opening state database: %w", err)
	}
	s.db = db
	// bbolt syncs the database file, not the directory entries naming it
	// (and its directory, when just created): without these a power cut
	// can lose the whole database after commits were acknowledged.
	if err := s.syncDirs(dir, filepath.Dir(dir)); err != nil {
		db.Close()
		return nil, fmt.Errorf("syncing state directory: %w", err)
	}
	if err := s.load(); err != nil {
		path := db.Path() // bbolt forgets it on Close
		db.Close()
		return nil, fmt.Errorf("loading state database %s: %w", path, err)
	}
	go s.commitLoop()
	return s, nil
}

// syncDirs fsyncs directories unless the store is volatile.
func (s *Store) syncDirs(dirs ...string) error {
	if s.volatile {
		return nil
	}
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	return nil
}

// syncDir fsyncs a directory, making its entries durable; tests record it.
var syncDir = func(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func newStore() *Store {
	s := &Store{
		wake:          make(chan struct{}, 1),
		done:          make(chan struct{}),
		volumeNames:   map[string]string{},
		snapshotNames: map[string]string{},
		groupNames:    map[string]string{},
		bySource:      map[string]map[string]bool{},
		pubsByVolume:  map[string]map[string]*Publication{},
		pubsPerNode:   map[string]int{},
		usage:         map[string]*Usage{},
	}
	s.committed = sync.NewCond(&s.mu)
	s.volumes = newTable("volumes", func(v *Volume) string { return v.ID }, func(v *Volume) *visibility { return &v.vis })
	s.snapshots = newTable("snapshots", func(v *Snapshot) string { return v.ID }, func(v *Snapshot) *visibility { return &v.vis })
	s.publications = newTable("publications", pubKey, func(v *Publication) *visibility { return &v.vis })
	s.mounts = newTable("mounts", mountKey, func(v *Mount) *visibility { return &v.vis })
	s.groups = newTable("groups", func(g *Group) string { return g.ID }, func(g *Group) *visibility { return &g.vis })
	s.indexVolumes()
	s.indexGroups()
	s.indexSnapshots()
	s.indexPublications()
	return s
}

func pubKey(p *Publication) string { return p.VolumeID + "\x00" + p.NodeID }
func mountKey(m *Mount) string     { return m.VolumeID + "\x00" + m.Path }

func (s *Store) zone(id string) *Usage {
	u := s.usage[id]
	if u == nil {
		u = &Usage{}
		s.usage[id] = u
	}
	return u
}

func (s *Store) indexVolumes() {
	s.volumes.onPut = func(v *Volume) {
		s.volumeNames[v.Name] = v.ID
		for _, z := range v.Zones() {
			s.zone(z).Bytes += v.CapacityBytes
		}
	}
	s.volumes.onDelete = func(v *Volume) {
		for _, z := range v.Zones() {
			s.zone(z).Bytes -= v.CapacityBytes
		}
	}
	s.volumes.onReap = func(v *Volume) { reapName(s.volumes, s.volumeNames, v, volumeName) }
}

func (s *Store) indexSnapshots() {
	s.snapshots.onPut = func(v *Snapshot) {
		if v.Name != "" { // group members have none
			s.snapshotNames[v.Name] = v.ID
		}
		if s.bySource[v.SourceVolume] == nil {
			s.bySource[v.SourceVolume] = map[string]bool{}
		}
		s.bySource[v.SourceVolume][v.ID] = true
		for _, z := range v.Zones {
			s.zone(z).Snapshots++
		}
	}
	s.snapshots.onDelete = func(v *Snapshot) {
		for _, z := range v.Zones {
			s.zone(z).Snapshots--
		}
	}
	s.snapshots.onReap = func(v *Snapshot) {
		reapName(s.snapshots, s.snapshotNames, v, snapshotName)
		cur := s.snapshots.rows[v.ID]
		if cur == nil || cur.SourceVolume != v.SourceVolume {
			delete(s.bySource[v.SourceVolume], v.ID)
			if len(s.bySource[v.SourceVolume]) == 0 {
				delete(s.bySource, v.SourceVolume)
			}
		}
	}
}

func (s *Store) indexGroups() {
	s.groups.onPut = func(g *Group) { s.groupNames[g.Name] = g.ID }
	s.groups.onReap = func(g *Group) { reapName(s.groups, s.groupNames, g, groupName) }
}

// reapName drops a reaped row r's entry from the name index names, unless
// the row now stored under r's key still has r's name.
func reapName[T any](t *table[T], names map[string]string, r *T, nameOf func(*T) string) {
	name, key := nameOf(r), t.key(r)
	if cur := t.rows[key]; names[name] == key && (cur == nil || nameOf(cur) != name) {
		delete(names, name)
	}
}

func (s *Store) indexPublications() {
	s.publications.onPut = func(p *Publication) {
		if s.pubsByVolume[p.VolumeID] == nil {
			s.pubsByVolume[p.VolumeID] = map[string]*Publication{}
		}
		s.pubsByVolume[p.VolumeID][p.NodeID] = p
		s.pubsPerNode[p.NodeID]++
	}
	s.publications.onDelete = func(p *Publication) { s.pubsPerNode[p.NodeID]-- }
	s.publications.onReap = func(p *Publication) {
		if s.pubsByVolume[p.VolumeID][p.NodeID] == p {
			delete(s.pubsByVolume[p.VolumeID], p.NodeID)
		}
		if len(s.pubsByVolume[p.VolumeID]) == 0 {
			delete(s.pubsByVolume, p.VolumeID)
		}
	}
}

// load reads every bucket into the mirror; everything on disk is durable.
func (s *Store) load() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := loadTable(tx, s.volumes); err != nil {
			return err
		}
		if err := loadTable(tx, s.snapshots); err != nil {
			return err
		}
		if err := loadTable(tx, s.publications); err != nil {
			return err
		}
		if err := loadTable(tx, s.groups); err != nil {
			return err
		}
		return loadTable(tx, s.mounts)
	})
}

func loadTable[T any](tx *bolt.Tx, t *table[T]) error {
	b, err := tx.CreateBucketIfNotExists(t.bucket)
	if err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		r := new(T)
		if err := json.Unmarshal(v, r); err != nil {
			return fmt.Errorf("bucket %s key %q: %w", t.bucket, k, err)
		}
		if t.key(r) != string(k) {
			return fmt.Errorf("bucket %s key %q holds a record for %q", t.bucket, k, t.key(r))
		}
		t.put(r, 0)
		return nil
	})
}

// Close waits for queued writes to commit and closes the database.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	s.mu.Unlock()
	close(s.wake)
	<-s.done
	return s.db.Close()
}

// commitLoop commits whatever is queued, one bbolt transaction at a time.
func (s *Store) commitLoop() {
	defer close(s.done)
	for range s.wake {
		s.commitPending()
	}
	s.commitPending()
}

func (s *Store) commitPending() {
	s.mu.Lock()
	batch := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	err := s.commit(batch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed = fmt.Errorf("committing state: %w", err)
	} else {
		s.durable = batch[len(batch)-1].seq
		s.volumes.reap(s.durable)
		s.snapshots.reap(s.durable)
		s.publications.reap(s.durable)
		s.mounts.reap(s.durable)
		s.groups.reap(s.durable)
	}
	s.committed.Broadcast()
}

func (s *Store) commit(batch []write) error {
	if s.beforeCommit != nil {
		if err := s.beforeCommit(); err != nil {
			return err
		}
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		for _, w := range batch {
			b := tx.Bucket(w.bucket)
			var err error
			if w.value == nil {
				err = b.Delete([]byte(w.key))
			} else {
				err = b.Put([]byte(w.key), w.value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Update runs fn against the writer's view under the store lock. fn must
// not block. When fn returns nil its writes are applied and Update
// returns once they (and anything fn read) are durable. When fn returns
// an error nothing is written and the error is returned as is.
func (s *Store) Update(fn func(tx *Tx) error) error {
	s.mu.Lock()
	if err := s.usable(); err != nil {
		s.mu.Unlock()
		return err
	}
	tx := &Tx{Reader: Reader{s: s}}
	if err := fn(tx); err != nil {
		s.mu.Unlock()
		return err
	}
	if len(tx.writes) > 0 {
		s.seq++
		for _, w := range tx.writes {
			w.apply(s.seq)
			s.pending = append(s.pending, write{bucket: w.bucket, key: w.key, value: w.value, seq: s.seq})
		}
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	target := s.seq
	for s.durable < target && s.failed == nil {
		s.committed.Wait()
	}
	err := s.failed
	s.mu.Unlock()
	if err != nil {
		return status.Errorf(codes.Internal, "state store: %v; restart the driver to reload the last durable state", err)
	}
	return nil
}

func (s *Store) usable() error {
	switch {
	case s.failed != nil:
		return status.Errorf(codes.Internal, "state store: %v; restart the driver to reload the last durable state", s.failed)
	case s.closing:
		return status.Error(codes.Unavailable, "state store is closing")
	}
	return nil
}
