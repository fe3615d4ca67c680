package datapath

import (
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// errChanged stops a ChangedSince walk at its first changed entry.
var errChanged = errors.New("changed")

// ChangedSince names an entry of the volume at root that changed at or
// after since, or "" when none did. root is a filesystem volume's
// directory, walked as a copy walks it, or a block volume's image file.
//
// The kernel stamps an inode's ctime on every change a tenant can make:
// a write of any kind, a truncate, a link, an unlink or a rename (the
// directories' ctime, and the renamed inode's), a change of mode, owner or
// extended attributes; and no call sets it to anything but the time of the
// change. So an entry removed since is seen through its directory, and an
// entry that vanishes during this walk counts as changed. ctime is stamped
// from CLOCK_REALTIME_COARSE (or finer), so since should be read from that
// clock: Now gives it.
//
// A store through a shared mapping stamps ctime only when it faults on a
// clean, write-protected page; a caller that needs those seen flushes the
// filesystem (Flush) after since, before the copy.
func ChangedSince(root string, since time.Time) (string, error) {
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		return "", &os.PathError{Op: "lstat", Path: root, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if !time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(since) {
			return ".", nil
		}
		return "", nil
	}
	var changed string
	w := walker{
		skipped: func(name string, why error) {
			if errors.Is(why, ErrVanished) && changed == "" {
				changed = name
			}
		},
		visit: func(e *Entry, _ io.Reader) error {
			if !e.ChangeTime.Before(since) {
				changed = e.Name
			}
			if changed != "" {
				return errChanged
			}
			return nil
		},
	}
	if err := w.walk(root); err != nil && !errors.Is(err, errChanged) {
		return "", err
	}
	return changed, nil
}

// Now is the time of CLOCK_REALTIME_COARSE, the clock the kernel stamps
// ctime from: a change after Now is stamped at or after it.
func Now() (time.Time, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts); err != nil {
		return time.Time{}, err
	}
	return time.Unix(ts.Sec, ts.Nsec), nil
}

// Flush writes back every dirty page of the filesystem holding path
// (syncfs). Writing a page back write-protects its shared mappings, so a
// tenant's next store through one faults and stamps the file's ctime.
func Flush(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Syncfs(fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

// HidesMappedStores reports whether the filesystem holding path stamps
// no ctime for stores through a shared mapping at all: tmpfs and ramfs
// write nothing back, so Flush cannot make a store fault.
func HidesMappedStores(path string) (bool, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return false, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return fs.Type == unix.TMPFS_MAGIC || fs.Type == unix.RAMFS_MAGIC, nil
}
