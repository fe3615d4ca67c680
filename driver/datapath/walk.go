package datapath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// walker visits a tree in pre-order, the root (".") first, each directory
// before its entries and its entries before the next sibling, names in
// byte order.
type walker struct {
	// openFiles hands each regular file's content to visit.
	openFiles bool
	skipped   Skipped
	// visit gets the content of a File when openFiles is set, else nil.
	visit func(e *Entry, content io.Reader) error
}

// afterList, when a test sets it, runs after a directory is listed and
// before its entries are looked at: the window a tenant's change falls in.
var afterList func(dir string)

// afterStat, when a test sets it, runs between looking at an entry and
// opening it: the narrower window that O_NOFOLLOW and the inode check
// close.
var afterStat func(name string)

// attempts bounds how often an entry replaced between two system calls is
// looked at again before it is skipped as ErrUnstable.
const attempts = 3

func (w *walker) walk(root string) error {
	dir, err := openDirAt(unix.AT_FDCWD, root)
	if err != nil {
		return &os.PathError{Op: "open", Path: root, Err: err}
	}
	defer dir.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return &os.PathError{Op: "fstat", Path: root, Err: err}
	}
	if err := w.visit(entryOf(".", &st), nil); err != nil {
		return err
	}
	return w.dir(dir, ".", 0)
}

// dir visits the entries of the open directory named name.
func (w *walker) dir(dir *os.File, name string, depth int) error {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("listing %q: %w", name, err)
	}
	// A directory that changes while it is listed may show a name twice;
	// a copy holds it once.
	slices.Sort(names)
	names = slices.Compact(names)
	if afterList != nil {
		afterList(name)
	}
	fd := int(dir.Fd())
	for _, base := range names {
		if err := w.entry(fd, join(name, base), base, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// entry visits the entry base of the directory fd, and what is below it.
func (w *walker) entry(fd int, name, base string, depth int) error {
	e, f, err := w.open(fd, name, base)
	switch {
	case errors.Is(err, ErrSocket), errors.Is(err, ErrDevice), errors.Is(err, ErrVanished), errors.Is(err, ErrUnstable):
		if w.skipped != nil {
			w.skipped(name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading %q: %w", name, err)
	}
	if f != nil {
		defer f.Close()
	}
	if e.Kind == Dir && depth > maxDepth {
		return fmt.Errorf("%q: %w", abbreviate(name), ErrTooDeep)
	}
	var content io.Reader
	if e.Kind == File && f != nil {
		content = f
	}
	if err := w.visit(e, content); err != nil {
		return err
	}
	if e.Kind == Dir {
		return w.dir(f, name, depth)
	}
	return nil
}

// open looks at the entry base of the directory fd without following it
// and returns it with an open descriptor for a directory (and for a file
// when openFiles is set). An entry replaced between the look and the open
// is looked at again, a few times.
func (w *walker) open(fd int, name, base string) (*Entry, *os.File, error) {
	for range attempts {
		var st unix.Stat_t
		if err := unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, nil, changed(err)
		}
		if afterStat != nil {
			afterStat(name)
		}
		e, f, err := w.openAs(fd, name, base, &st)
		if !errors.Is(err, errChanged) {
			return e, f, err
		}
	}
	return nil, nil, ErrUnstable
}

// openAs opens what fstatat found. Sockets and devices are never opened:
// opening a device can act on it.
func (w *walker) openAs(fd int, name, base string, st *unix.Stat_t) (*Entry, *os.File, error) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
		return nil, nil, ErrSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		return nil, nil, ErrDevice
	case unix.S_IFIFO:
		return entryOf(name, st), nil, nil
	case unix.S_IFLNK:
		target, err := readlinkat(fd, base)
		if err != nil {
			return nil, nil, changed(err)
		}
		e := entryOf(name, st)
		e.Target = target
		return e, nil, nil
	case unix.S_IFDIR:
		return openSame(fd, name, base, st, unix.O_DIRECTORY)
	case unix.S_IFREG:
		if !w.openFiles {
			return entryOf(name, st), nil, nil
		}
		// O_NONBLOCK: should a FIFO be swapped in, opening it must not
		// wait for a writer; openSame then sees another inode.
		return openSame(fd, name, base, st, unix.O_NONBLOCK|unix.O_NOCTTY)
	}
	return nil, nil, fmt.Errorf("unknown file type %#o", st.Mode&unix.S_IFMT)
}

// openSame opens base below fd, never following a symlink, and makes sure
// it opened the inode fstatat saw: the entry's type is then the opened
// descriptor's, whatever was swapped in meanwhile.
func openSame(fd int, name, base string, st *unix.Stat_t, flags int) (*Entry, *os.File, error) {
	nfd, err := unix.Openat(fd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return nil, nil, changed(err)
	}
	var now unix.Stat_t
	if err := unix.Fstat(nfd, &now); err != nil {
		unix.Close(nfd)
		return nil, nil, err
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(nfd)
		return nil, nil, errChanged
	}
	return entryOf(name, &now), os.NewFile(uintptr(nfd), name), nil
}

// changed tells the errors of an entry that was removed or replaced
// between two system calls from real failures.
func changed(err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return ErrVanished
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ENXIO),
		errors.Is(err, unix.EINVAL): // readlinkat of what is no longer a symlink
		return errChanged
	}
	return err
}

// openDirAt opens the directory name below fd, never following a symlink.
func openDirAt(fd int, name string) (*os.File, error) {
	nfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(nfd), name), nil
}

// readlinkat reads a symlink's target; Linux caps it below PATH_MAX.
func readlinkat(fd int, base string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, base, buf)
	if err != nil {
		return "", err
	}
	if n == len(buf) {
		return "", fmt.Errorf("symlink target longer than %d bytes", unix.PathMax)
	}
	return string(buf[:n]), nil
}

// Usage counts the entries of the tree below dir, the root and the
// entries a copy skips included, and the bytes of its regular files. It
// reads the tree the way a copy does, so a tenant's swaps cannot make it
// count anything outside.
func Usage(dir string) (bytes, inodes int64, err error) {
	w := walker{
		skipped: func(_ string, why error) {
			if errors.Is(why, ErrSocket) || errors.Is(why, ErrDevice) {
				inodes++
			}
		},
		visit: func(e *Entry, _ io.Reader) error {
			inodes++
			if e.Kind == File {
				bytes += e.Size
			}
			return nil
		},
	}
	err = w.walk(dir)
	return bytes, inodes, err
}

// abbreviate shortens a path too deep to copy to its first and last
// levels: the whole of it may be thousands of bytes, more than an event or
// a status message holds.
func abbreviate(name string) string {
	parts := strings.Split(name, "/")
	if len(parts) <= 8 {
		return name
	}
	return fmt.Sprintf("%s/…(%d more)…/%s", strings.Join(parts[:4], "/"), len(parts)-8, strings.Join(parts[len(parts)-4:], "/"))
}
