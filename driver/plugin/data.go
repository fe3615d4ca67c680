package plugin

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/datapath"
)

// dataDir lays out volume and snapshot data under one root:
// volumes/<id>/ (filesystem volumes), volumes/<id>.img (block volumes)
// and snapshots/<id>.tar. Every path is built from an ID that passed
// checkID, so it is always a single element below the root.
//
// A record must never outlive its data in a power cut. File contents are
// fsynced before a create returns; the directory entries a create made
// are noted and made durable by syncEntries, which the store runs before
// each group commit (state.BeforeCommit), so that concurrent creates
// share one fsync of volumes/ or snapshots/.
type dataDir struct {
	root string
	// syncDir makes a directory's entries durable; tests record it.
	syncDir func(path string) error

	mu sync.Mutex
	// unsynced are the directories holding entries not yet durable.
	unsynced map[string]bool
}

func newDataDir(root string, volatile bool) (*dataDir, error) {
	d := &dataDir{root: root, syncDir: syncDir, unsynced: map[string]bool{}}
	if volatile {
		d.syncDir = func(string) error { return nil }
	}
	for _, sub := range []string{"volumes", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(root, sub), 0o750); err != nil {
			return nil, fmt.Errorf("creating data directory: %w", err)
		}
	}
	for _, dir := range []string{root, filepath.Dir(root)} {
		if err := d.syncDir(dir); err != nil {
			return nil, fmt.Errorf("syncing data directory: %w", err)
		}
	}
	return d, nil
}

// tempSuffix marks a file being written, renamed to its final name once
// complete. At start-up none is being written, so reclaim removes them.
const tempSuffix = ".tmp"

func tempPath(final string) string { return final + tempSuffix }

// syncDir fsyncs a directory, making the entries created, renamed or
// removed in it durable.
func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// note records directories in which a create made entries, for
// syncEntries.
func (d *dataDir) note(dirs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dir := range dirs {
		d.unsynced[dir] = true
	}
}

// syncEntries makes every entry noted by added durable. A directory gone
// since (the create failed and its data was removed) has nothing to keep.
func (d *dataDir) syncEntries() error {
	d.mu.Lock()
	dirs := d.unsynced
	d.unsynced = map[string]bool{}
	d.mu.Unlock()
	for dir := range dirs {
		if err := d.syncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("syncing data directory entries: %w", err)
		}
	}
	return nil
}

func (d *dataDir) volumePath(id string, block bool) string {
	if block {
		return filepath.Join(d.root, "volumes", id+".img")
	}
	return filepath.Join(d.root, "volumes", id)
}

func (d *dataDir) snapshotPath(id string) string {
	return filepath.Join(d.root, "snapshots", id+".tar")
}

// blockSnapshotPath holds a block volume's snapshot as a sparse image:
// copying holes as data would turn a 10 GiB empty volume into 10 GiB of
// writes.
func (d *dataDir) blockSnapshotPath(id string) string {
	return filepath.Join(d.root, "snapshots", id+".img")
}

// createVolume makes the backing directory or sparse file, filled from
// a snapshot archive or a source volume when given. The source is the
// tenant's and may change under the copy: datapath reads it without ever
// leaving it.
func (d *dataDir) createVolume(id string, block bool, size int64, fromSnapshot, fromVolume string) error {
	path := d.volumePath(id, block)
	if block {
		err := d.createBlock(path, size, fromSnapshot, fromVolume)
		if err != nil {
			os.Remove(path)
			return err
		}
		d.note(filepath.Dir(path))
		return nil
	}
	if err := os.Mkdir(path, 0o777); err != nil {
		return err
	}
	dirs, err := d.fillVolume(id, path, fromSnapshot, fromVolume)
	if err != nil {
		os.RemoveAll(path)
		return err
	}
	d.note(append(dirs, filepath.Dir(path))...)
	return nil
}

// fillVolume copies a snapshot's or a volume's tree into a new volume and
// returns the directories it made entries in.
func (d *dataDir) fillVolume(id, path, fromSnapshot, fromVolume string) ([]string, error) {
	switch {
	case fromSnapshot != "":
		f, err := openRegular(d.snapshotPath(fromSnapshot), os.O_RDONLY)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return datapath.Extract(path, bufio.NewReaderSize(f, 64<<10))
	case fromVolume != "":
		skips := newSkipLog("operation", "clone", "volumeID", fromVolume, "newVolumeID", id)
		defer skips.done()
		return datapath.Clone(path, d.volumePath(fromVolume, false), skips.skipped)
	}
	return nil, nil
}

func (d *dataDir) createBlock(path string, size int64, fromSnapshot, fromVolume string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|unix.O_NOFOLLOW, 0o660)
	if err != nil {
		return err
	}
	defer f.Close()
	switch {
	case fromSnapshot != "":
		err = copyImage(f, d.blockSnapshotPath(fromSnapshot))
	case fromVolume != "":
		err = copyImage(f, d.volumePath(fromVolume, true))
	}
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync() // the copy must outlive a crash once the record does
}

// copyImage copies a block image, sparsely, from the file at src, which
// must be a regular file and not a link to one.
func copyImage(dst *os.File, src string) error {
	in, err := openRegular(src, os.O_RDONLY)
	if err != nil {
		return err
	}
	defer in.Close()
	return datapath.CopySparse(dst, in)
}

// openRegular opens one of the driver's own data files. Their names are
// the driver's, but what a tenant reaches is never trusted to be what the
// name says: a symlink or anything but a regular file is refused.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", path)
		}
		return nil, err
	}
	return f, nil
}

func (d *dataDir) resizeBlock(id string, size int64) error {
	f, err := openRegular(d.volumePath(id, true), os.O_WRONLY)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// deleteVolume removes a volume's data. os.RemoveAll never follows a
// symlink below the path it is given.
func (d *dataDir) deleteVolume(id string) error {
	if err := os.RemoveAll(d.volumePath(id, false)); err != nil {
		return err
	}
	if err := os.Remove(d.volumePath(id, true)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// volumeExists tells a node plugin whether the controller created it.
func (d *dataDir) volumeExists(id string) (exists, block bool) {
	if st, err := os.Lstat(d.volumePath(id, false)); err == nil && st.IsDir() {
		return true, false
	}
	if st, err := os.Lstat(d.volumePath(id, true)); err == nil && st.Mode().IsRegular() {
		return true, true
	}
	return false, false
}

// snapshot archives the volume's data (a filesystem tree, or the block
// image as a sparse copy) into the snapshot file, written under a
// temporary name and renamed once complete and durable.
func (d *dataDir) snapshot(snapID, volID string, block bool) error {
	final := d.snapshotPath(snapID)
	if block {
		final = d.blockSnapshotPath(snapID)
	}
	tmp := tempPath(final)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	if block {
		err = copyImage(f, d.volumePath(volID, true))
	} else {
		err = archiveVolume(f, d.volumePath(volID, false), snapID, volID)
	}
	// The snapshot's record is committed after this returns: its data
	// must be on disk first, or a crash leaves a snapshot without data.
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return err
	}
	d.note(filepath.Dir(final))
	return nil
}

func archiveVolume(f *os.File, dir, snapID, volID string) error {
	skips := newSkipLog("operation", "snapshot", "volumeID", volID, "snapshotID", snapID)
	defer skips.done()
	w := bufio.NewWriterSize(f, 64<<10)
	if err := datapath.Archive(w, dir, skips.skipped); err != nil {
		return err
	}
	return w.Flush()
}

// isBlockSnapshot tells whether a snapshot holds a block image, for a
// restore checked before anything is copied.
func (d *dataDir) isBlockSnapshot(id string) bool {
	_, err := os.Lstat(d.blockSnapshotPath(id))
	return err == nil
}

func (d *dataDir) deleteSnapshot(id string) error {
	for _, p := range []string{d.snapshotPath(id), d.blockSnapshotPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// dataStatus is the status of a call whose copy or walk of volume data
// failed. A tree nested deeper than datapath.MaxDepth is the tenant's
// layout, not a fault of the driver's: FAILED_PRECONDITION tells the user
// what to change, where INTERNAL would hide it and invite a retry that
// cannot succeed until the tree is flattened.
func dataStatus(err error, format string, args ...any) error {
	code := codes.Internal
	if errors.Is(err, datapath.ErrTooDeep) {
		code = codes.FailedPrecondition
	}
	return status.Errorf(code, format+": %v", append(args, err)...)
}

// usage sums the bytes and inodes below a volume directory, read as a copy
// reads it: a tenant's swaps cannot make it walk anything outside.
func (d *dataDir) usage(id string) (bytes, inodes int64, err error) {
	return datapath.Usage(d.volumePath(id, false))
}

// maxSkipLines bounds the log lines one copy writes about entries it left
// out, so that a volume of a million sockets cannot flood the log.
const maxSkipLines = 100

// skipLog logs what a copy of a volume leaves out: a socket or a device
// with one line each (up to maxSkipLines, then one line with the count of
// the rest), an entry removed during the copy at -v=2, since a busy
// volume has many.
type skipLog struct {
	kv           []any // what the copy is: operation and IDs
	logged, more int
}

func newSkipLog(kv ...any) *skipLog { return &skipLog{kv: kv} }

func (s *skipLog) skipped(name string, why error) {
	kv := append(slices.Clip(s.kv), "entry", name, "reason", why.Error())
	switch {
	case errors.Is(why, datapath.ErrVanished):
		klog.V(2).InfoS("Left out an entry that changed during the copy", kv...)
	case s.logged < maxSkipLines:
		s.logged++
		klog.InfoS("Left out an entry a copy cannot hold", kv...)
	default:
		s.more++
	}
}

func (s *skipLog) done() {
	if s.more > 0 {
		klog.InfoS("Left out more entries a copy cannot hold", append(slices.Clip(s.kv), "count", s.more)...)
	}
}
