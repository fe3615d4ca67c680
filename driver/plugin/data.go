package plugin

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
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

// added notes the entries of a file or tree just created, for syncEntries.
func (d *dataDir) added(path string) error {
	dirs := map[string]bool{}
	err := filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		dirs[filepath.Dir(p)] = true
		return err
	})
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	maps.Copy(d.unsynced, dirs)
	return nil
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
// a snapshot archive or a source volume when given.
func (d *dataDir) createVolume(id string, block bool, size int64, fromSnapshot, fromVolume string) error {
	path := d.volumePath(id, block)
	if block {
		err := d.createBlock(path, size, fromSnapshot, fromVolume)
		if err == nil {
			err = d.added(path)
		}
		if err != nil {
			os.Remove(path)
		}
		return err
	}
	if err := os.MkdirAll(path, 0o777); err != nil {
		return err
	}
	var err error
	switch {
	case fromSnapshot != "":
		err = extractTar(d.snapshotPath(fromSnapshot), path)
	case fromVolume != "":
		err = copyTree(d.volumePath(fromVolume, false), path)
	}
	if err == nil {
		err = d.added(path)
	}
	if err != nil {
		os.RemoveAll(path)
	}
	return err
}

func (d *dataDir) createBlock(path string, size int64, fromSnapshot, fromVolume string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o660)
	if err != nil {
		return err
	}
	defer f.Close()
	switch {
	case fromSnapshot != "":
		err = copySparse(d.blockSnapshotPath(fromSnapshot), f)
	case fromVolume != "":
		err = copySparse(d.volumePath(fromVolume, true), f)
	}
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync() // the copy must outlive a crash once the record does
}

func (d *dataDir) resizeBlock(id string, size int64) error {
	return os.Truncate(d.volumePath(id, true), size)
}

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
	if st, err := os.Stat(d.volumePath(id, false)); err == nil && st.IsDir() {
		return true, false
	}
	if st, err := os.Stat(d.volumePath(id, true)); err == nil && st.Mode().IsRegular() {
		return true, true
	}
	return false, false
}

// snapshot archives the volume's data (a filesystem tree, or the block
// image as a single entry) into the snapshot file.
func (d *dataDir) snapshot(snapID, volID string, block bool) error {
	final := d.snapshotPath(snapID)
	if block {
		final = d.blockSnapshotPath(snapID)
	}
	tmp := tempPath(final)
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	if block {
		err = copySparse(d.volumePath(volID, true), f)
	} else {
		err = tw.AddFS(os.DirFS(d.volumePath(volID, false)))
	}
	if err == nil && !block {
		err = tw.Close()
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
	return d.added(final)
}

// isBlockSnapshot tells whether a snapshot holds a block image, for a
// restore checked before anything is copied.
func (d *dataDir) isBlockSnapshot(id string) bool {
	_, err := os.Stat(d.blockSnapshotPath(id))
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

// usage sums the bytes and inodes below a volume directory.
func (d *dataDir) usage(id string) (bytes, inodes int64, err error) {
	err = filepath.WalkDir(d.volumePath(id, false), func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		inodes++
		if info, ierr := e.Info(); ierr == nil && info.Mode().IsRegular() {
			bytes += info.Size()
		}
		return nil
	})
	return bytes, inodes, err
}

// extractTar unpacks regular files and directories only, refusing any
// entry that would land outside dst.
func extractTar(archive, dst string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if name == "." {
			continue
		}
		if !filepath.IsLocal(name) {
			return fmt.Errorf("snapshot entry %q escapes the volume", h.Name)
		}
		target := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o777)
		case tar.TypeReg:
			err = writeFile(target, tr, fs.FileMode(h.Mode).Perm())
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if err == nil {
		err = out.Sync() // restored data must be durable before the volume's record
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// copyTree copies regular files and directories of a source volume.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(target, 0o777)
		case e.Type().IsRegular():
			in, err := os.Open(path)
			if err != nil {
				return err
			}
			defer in.Close()
			return writeFile(target, in, 0o666)
		}
		return nil
	})
}

// copySparse copies only the data extents of src (SEEK_DATA/SEEK_HOLE)
// and gives dst the same size, so holes stay holes.
func copySparse(src string, dst *os.File) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	for off := int64(0); off < st.Size(); {
		data, err := in.Seek(off, unix.SEEK_DATA)
		if err != nil {
			break // ENXIO: no data after off
		}
		hole, err := in.Seek(data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.NewOffsetWriter(dst, data), io.NewSectionReader(in, data, hole-data)); err != nil {
			return err
		}
		off = hole
	}
	return dst.Truncate(st.Size())
}
