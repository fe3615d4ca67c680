package datapath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
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
// opening it for reading: the window a tenant's swap of the name falls in.
// What is read is the inode looked at, whatever the name holds by then.
var afterStat func(name string)

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
	if errors.Is(err, unix.ENOENT) {
		// Removed since it was opened: rmdir removes only an empty
		// directory, so empty is what it last held.
		names, err = nil, nil
	}
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
	case errors.Is(err, ErrSocket), errors.Is(err, ErrDevice), errors.Is(err, ErrVanished):
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
// when openFiles is set).
//
// The look is an O_PATH descriptor, which pins the inode without opening
// it: no device's open runs, no FIFO waits. Everything after reads that
// inode, so a rename over the name meanwhile (an application's
// write-then-rename, or a tenant's swap) changes nothing: the copy holds
// the version that was looked at, never another file, never a skip.
func (w *walker) open(fd int, name, base string) (*Entry, *os.File, error) {
	pfd, err := unix.Openat(fd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil, ErrVanished
	}
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, nil, err
	}
	if afterStat != nil {
		afterStat(name)
	}
	return w.openAs(pfd, name, &st)
}

// openAs reads what the O_PATH descriptor pfd pinned. Only directories
// and regular files are ever opened for reading: opening a device can act
// on it (a tape rewinds), opening a FIFO can block or wake its writer.
func (w *walker) openAs(pfd int, name string, st *unix.Stat_t) (*Entry, *os.File, error) {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK:
		return nil, nil, ErrSocket
	case unix.S_IFCHR, unix.S_IFBLK:
		return nil, nil, ErrDevice
	case unix.S_IFIFO:
		return entryOf(name, st), nil, nil
	case unix.S_IFLNK:
		target, err := readlinkat(pfd, "") // the pinned link itself
		if err != nil {
			return nil, nil, err
		}
		e := entryOf(name, st)
		e.Target = target
		return e, nil, nil
	case unix.S_IFDIR:
		return reopen(pfd, name, st, unix.O_DIRECTORY)
	case unix.S_IFREG:
		if !w.openFiles {
			return entryOf(name, st), nil, nil
		}
		return reopen(pfd, name, st, 0)
	}
	return nil, nil, fmt.Errorf("unknown file type %#o", st.Mode&unix.S_IFMT)
}

// reopen opens the inode the O_PATH descriptor pfd pinned for reading.
// /proc/self/fd/N names the descriptor's own file, not a path walked
// again, so it is that inode whatever its name now holds (Linux has no
// other way to turn an O_PATH descriptor into a readable one). The check
// that it is the same inode guards against a /proc that is not this
// process's.
func reopen(pfd int, name string, st *unix.Stat_t, flags int) (*Entry, *os.File, error) {
	nfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|flags, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("reopening through /proc/self/fd: %w", err)
	}
	var now unix.Stat_t
	if err := unix.Fstat(nfd, &now); err != nil {
		unix.Close(nfd)
		return nil, nil, err
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(nfd)
		return nil, nil, errors.New("reopening through /proc/self/fd gave another inode: is /proc this process's?")
	}
	return entryOf(name, &now), os.NewFile(uintptr(nfd), name), nil
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
