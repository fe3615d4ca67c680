package plugin

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/state"
)

// newRecord records an object whose data CreateVolume, CreateSnapshot or
// CreateVolumeGroupSnapshot has already made under a new ID. A record of
// the requested name that appeared meanwhile (a concurrent request with
// the same name won) must be the same object and is returned instead;
// then, or on any error, the data made under id is removed. A crash before
// that leaves it to reclaim.
type newRecord[T any] struct {
	kind   string // "volume", "snapshot" or "group snapshot", for the log
	id     string
	byName func(*state.Tx) *T // a record of the requested name, or nil
	same   func(*T) error     // accepts that record for this request
	// reuse, when set, replaces same: it accepts that record and may
	// update it in the same Tx (a volume taking a retry's new mutable
	// parameters), returning the record as it now is.
	reuse    func(*state.Tx, *T) (*T, error)
	place    func(*state.Tx) (*T, error) // the record of the new object
	put      func(*state.Tx, *T)
	dropData func() error
}

func (n newRecord[T]) commit(ctx context.Context, store *state.Store) (*T, error) {
	var rec *T
	created := false
	err := store.Update(func(tx *state.Tx) error {
		if existing := n.byName(tx); existing != nil {
			if n.reuse != nil {
				var err error
				rec, err = n.reuse(tx, existing)
				return err
			}
			rec = existing
			return n.same(existing)
		}
		r, err := n.place(tx)
		if err != nil {
			return err
		}
		n.put(tx, r)
		rec, created = r, true
		return nil
	})
	if err != nil || !created {
		if derr := n.dropData(); derr != nil {
			klog.FromContext(ctx).Error(derr, "Removing data of a "+n.kind+" that was not created", n.kind+"ID", n.id)
		}
	}
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// deletion deletes the record DeleteVolume or DeleteSnapshot names, then
// its data. A record that does not exist is already deleted (spec: both
// RPCs are idempotent); keep refuses the deletion of one that must stay,
// such as one in a zone that is down, where nothing is deleted. The data
// goes after the record is durably gone: a crash in between leaves orphan
// data to reclaim, never a record whose data vanished.
type deletion[T any] struct {
	kind     string // "volume" or "snapshot", for the error
	id       string
	get      func(*state.Tx) *T // the record, or nil
	keep     func(*state.Tx, *T) error
	remove   func(*state.Tx)
	entries  *encodingCache[T]
	dropData func() error
}

func (d deletion[T]) commit(store *state.Store) error {
	err := store.Update(func(tx *state.Tx) error {
		r := d.get(tx)
		if r == nil {
			return nil
		}
		if err := d.keep(tx, r); err != nil {
			return err
		}
		d.remove(tx)
		return nil
	})
	if err != nil {
		return err
	}
	d.entries.forget(d.id)
	if err := d.dropData(); err != nil {
		return status.Errorf(codes.Internal, "deleting data of %s %s: %v", d.kind, d.id, err)
	}
	return nil
}
