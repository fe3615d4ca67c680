package state

import (
	"github.com/google/btree"
)

// table is one kind of record held in memory, ordered by key, mirrored
// in one bbolt bucket. Every method is called with Store.mu held.
type table[T any] struct {
	bucket []byte
	rows   map[string]*T
	order  *btree.BTreeG[string]
	key    func(*T) string
	vis    func(*T) *visibility
	// onPut and onDelete keep the writer's indexes and counters in step
	// with the writer's view; onReap drops a row from the indexes readers
	// also use, once its deletion or replacement is durable. onReap must
	// leave entries that the row now stored under its key still needs.
	onPut, onDelete, onReap func(*T)
	// dead holds deleted rows until their deletion is durable; fresh
	// holds rows that replaced a durable one until they are durable.
	dead, fresh []*T
}

func newTable[T any](bucket string, key func(*T) string, vis func(*T) *visibility) *table[T] {
	return &table[T]{
		bucket:   []byte(bucket),
		rows:     map[string]*T{},
		order:    btree.NewG(32, func(a, b string) bool { return a < b }),
		key:      key,
		vis:      vis,
		onPut:    func(*T) {},
		onDelete: func(*T) {},
		onReap:   func(*T) {},
	}
}

// live returns the row the writer sees (not deleted, durable or not).
func (t *table[T]) live(k string) *T {
	r := t.rows[k]
	if r == nil || !t.vis(r).live() {
		return nil
	}
	return r
}

// visible returns the row a reader sees: acknowledged and not deleted.
// While a replacement is being committed, that is the newest durable row
// in its chain of predecessors.
func (t *table[T]) visible(k string, durable uint64) *T {
	for r := t.rows[k]; r != nil; {
		v := t.vis(r)
		if v.visible(durable) {
			return r
		}
		if v.created <= durable {
			return nil // durable, and durably deleted
		}
		r, _ = v.prev.(*T)
	}
	return nil
}

func (t *table[T]) put(r *T, seq uint64) {
	k := t.key(r)
	if old := t.rows[k]; old != nil {
		if t.vis(old).live() {
			t.onDelete(old)
		}
		// Readers keep old (or what it replaced) until r is durable,
		// also when old's deletion is still being committed.
		t.vis(r).prev = old
		t.fresh = append(t.fresh, r)
	}
	t.vis(r).created = seq
	t.rows[k] = r
	t.order.ReplaceOrInsert(k)
	t.onPut(r)
}

func (t *table[T]) delete(k string, seq uint64) {
	r := t.live(k)
	if r == nil {
		return
	}
	t.vis(r).deleted = seq
	t.onDelete(r)
	t.dead = append(t.dead, r)
}

// reap drops deleted rows once their deletion is durable, and the rows
// that durable replacements superseded. A row replaced by a newer one
// under the same key is left alone.
func (t *table[T]) reap(durable uint64) {
	dead := t.dead[:0]
	for _, r := range t.dead {
		if t.vis(r).deleted > durable {
			dead = append(dead, r)
			continue
		}
		k := t.key(r)
		if t.rows[k] == r {
			delete(t.rows, k)
			t.order.Delete(k)
		}
		t.onReap(r)
	}
	t.dead = dead
	fresh := t.fresh[:0]
	for _, r := range t.fresh {
		if t.vis(r).created > durable {
			fresh = append(fresh, r)
			continue
		}
		if prev, _ := t.vis(r).prev.(*T); prev != nil {
			t.onReap(prev)
		}
		t.vis(r).prev = nil
	}
	t.fresh = fresh
}

// ascend visits visible rows with key >= from, in key order, until fn
// returns false.
func (t *table[T]) ascend(from string, durable uint64, fn func(*T) bool) {
	t.order.AscendGreaterOrEqual(from, func(k string) bool {
		r := t.visible(k, durable)
		if r == nil {
			return true
		}
		return fn(r)
	})
}
