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
	// onPut and onDelete keep secondary indexes and usage counters in
	// step with the writer's view.
	onPut, onDelete func(*T)
	// dead holds deleted rows until their deletion is durable.
	dead []*T
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
func (t *table[T]) visible(k string, durable uint64) *T {
	r := t.rows[k]
	if r == nil || !t.vis(r).visible(durable) {
		return nil
	}
	return r
}

func (t *table[T]) put(r *T, seq uint64) {
	k := t.key(r)
	if old := t.live(k); old != nil {
		t.onDelete(old)
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

// reap drops deleted rows once their deletion is durable. A row replaced
// by a newer one under the same key is left alone.
func (t *table[T]) reap(durable uint64) {
	kept := t.dead[:0]
	for _, r := range t.dead {
		if t.vis(r).deleted > durable {
			kept = append(kept, r)
			continue
		}
		k := t.key(r)
		if t.rows[k] == r {
			delete(t.rows, k)
			t.order.Delete(k)
		}
	}
	t.dead = kept
}

// ascend visits visible rows with key >= from, in key order, until fn
// returns false.
func (t *table[T]) ascend(from string, durable uint64, fn func(*T) bool) {
	t.order.AscendGreaterOrEqual(from, func(k string) bool {
		r := t.rows[k]
		if r == nil || !t.vis(r).visible(durable) {
			return true
		}
		return fn(r)
	})
}
