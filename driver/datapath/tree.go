package datapath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tree writes entries into the root directory of a new volume, which only
// its caller can reach. Each entry is created by one name below its
// parent's open descriptor, never following a symlink, and must come in
// pre-order (a directory before its entries, its entries together), as
// Archive writes them and a walk visits them. So an entry whose parent is
// a symlink or a file is refused, never written through.
type tree struct {
	root string
	// owners is whether entries get their owner and group: only root can
	// give them away.
	owners bool
	// open holds the directory being filled and its ancestors, the root
	// first; a directory's metadata is applied as it leaves.
	open []*filling
	// touched are the directories that got an entry or metadata, for the
	// caller to make durable.
	touched map[string]bool
}

// filling is a directory of the tree whose entries are being written.
type filling struct {
	name string // below the root; "." for the root itself
	f    *os.File
	meta *Entry // applied once its entries are written; nil: none
}

func newTree(root string) (*tree, error) {
	f, err := openDirAt(unix.AT_FDCWD, root)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return &tree{
		root:    root,
		owners:  os.Geteuid() == 0,
		open:    []*filling{{name: ".", f: f}},
		touched: map[string]bool{},
	}, nil
}

// put creates e; content holds a File's Size bytes.
func (t *tree) put(e *Entry, content io.Reader) error {
	if e.Name == "." {
		if e.Kind != Dir {
			return refuse(e.Name, "is the volume's root but not a directory")
		}
		t.open[0].meta = e // applied last, by finish
		t.touched["."] = true
		return nil
	}
	parent, err := t.parent(e.Name)
	if err != nil {
		return err
	}
	t.touched[parent.name] = true
	fd, base := int(parent.f.Fd()), path.Base(e.Name)
	switch e.Kind {
	case Dir:
		err = t.mkdir(fd, base, e)
	case File:
		err = t.file(fd, base, e, content)
	case Symlink:
		err = t.symlink(fd, base, e)
	case FIFO:
		err = t.fifo(fd, base, e)
	default:
		err = fmt.Errorf("unknown kind %d", e.Kind)
	}
	if errors.Is(err, unix.EEXIST) {
		return refuse(e.Name, "comes twice")
	}
	if err != nil {
		return fmt.Errorf("writing %q: %w", e.Name, err)
	}
	return nil
}

// parent finds the open directory an entry goes into, leaving (and
// completing) the directories it is not in. In pre-order, that is always
// the directory being filled or one of its ancestors.
func (t *tree) parent(name string) (*filling, error) {
	dir := path.Dir(name)
	for len(t.open) > 1 && !within(dir, t.open[len(t.open)-1].name) {
		if err := t.leave(); err != nil {
			return nil, err
		}
	}
	top := t.open[len(t.open)-1]
	if top.name == dir {
		return top, nil
	}
	// The parent is not being filled: say why, without ever opening it.
	below := dir
	if top.name != "." {
		below = strings.TrimPrefix(dir, top.name+"/")
	}
	next, _, _ := strings.Cut(below, "/")
	var st unix.Stat_t
	err := unix.Fstatat(int(top.f.Fd()), next, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err != nil:
		return nil, refuse(name, "comes without its directory")
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return nil, refuse(name, "lies below a symlink, which a restore never writes through")
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return nil, refuse(name, "lies below an entry that is not a directory")
	}
	return nil, refuse(name, "comes after its directory's entries")
}

// within reports whether the directory name is dir or lies below it.
func within(name, dir string) bool {
	return dir == "." || name == dir || strings.HasPrefix(name, dir+"/")
}

func (t *tree) mkdir(fd int, base string, e *Entry) error {
	if len(t.open) > maxDepth {
		return ErrTooDeep
	}
	if err := unix.Mkdirat(fd, base, 0o700); err != nil {
		return err
	}
	f, err := openDirAt(fd, base)
	if err != nil {
		return err
	}
	t.open = append(t.open, &filling{name: e.Name, f: f, meta: e})
	t.touched[e.Name] = true
	return nil
}

func (t *tree) file(fd int, base string, e *Entry, content io.Reader) error {
	nfd, err := unix.Openat(fd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(nfd), e.Name)
	err = writeContent(f, content, e.Size)
	if err == nil {
		err = t.setMeta(fd, base, e, f)
	}
	if err == nil {
		err = f.Sync() // restored data must be durable before the volume's record
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeContent fills a new file: from a source volume's file by its data
// extents, from an archive's sparse entry by the extents it recorded, and
// always with zero blocks from an archive left out; holes stay holes.
func writeContent(dst *os.File, content io.Reader, size int64) error {
	var err error
	switch c := content.(type) {
	case *os.File:
		err = copyExtents(dst, c, size)
	case *packed:
		err = writePacked(dst, c)
	default:
		err = writeHoles(dst, content, size)
	}
	if err != nil {
		return err
	}
	return dst.Truncate(size)
}

func (t *tree) symlink(fd int, base string, e *Entry) error {
	if e.Target == "" {
		return refuse(e.Name, "is a symlink without a target")
	}
	if err := unix.Symlinkat(e.Target, fd, base); err != nil {
		return err
	}
	return t.setMeta(fd, base, e, nil)
}

// fifo makes a FIFO; it is opened for its mode, without waiting for a
// writer, since only a descriptor's mode is set without following a link.
func (t *tree) fifo(fd int, base string, e *Entry) error {
	if err := unix.Mknodat(fd, base, unix.S_IFIFO|0o600, 0); err != nil {
		return err
	}
	nfd, err := unix.Openat(fd, base, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(nfd), e.Name)
	defer f.Close()
	return t.setMeta(fd, base, e, f)
}

// setMeta gives the entry base of the directory fd its owner, mode and
// modification time; f is the entry itself, nil for a symlink. The mode
// comes after the owner, since a change of owner clears setuid and setgid.
// Where owners cannot be kept, setuid and setgid are dropped: they would
// otherwise be the driver's.
func (t *tree) setMeta(fd int, base string, e *Entry, f *os.File) error {
	perm := e.Perm
	if t.owners {
		if err := unix.Fchownat(fd, base, e.UID, e.GID, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
	} else {
		perm &^= unix.S_ISUID | unix.S_ISGID
	}
	if f != nil {
		if err := unix.Fchmod(int(f.Fd()), perm); err != nil {
			return err
		}
	}
	return unix.UtimesNanoAt(fd, base, mtime(e), unix.AT_SYMLINK_NOFOLLOW)
}

// mtime sets the modification time and leaves the access time alone.
func mtime(e *Entry) []unix.Timespec {
	return []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(e.ModTime.UnixNano())}
}

// leave completes the directory being filled: its metadata is applied now
// that no entry will change it.
func (t *tree) leave() error {
	d := t.open[len(t.open)-1]
	t.open = t.open[:len(t.open)-1]
	defer d.f.Close()
	if d.meta == nil {
		return nil
	}
	parent := t.open[len(t.open)-1]
	return t.setMeta(int(parent.f.Fd()), path.Base(d.name), d.meta, d.f)
}

// finish completes every directory, the root last, and returns the
// directories that got entries or metadata.
func (t *tree) finish() ([]string, error) {
	for len(t.open) > 1 {
		if err := t.leave(); err != nil {
			return nil, err
		}
	}
	if err := t.finishRoot(); err != nil {
		return nil, err
	}
	dirs := make([]string, 0, len(t.touched))
	for name := range t.touched {
		dirs = append(dirs, filepath.Join(t.root, filepath.FromSlash(name)))
	}
	return dirs, nil
}

// finishRoot applies the root's metadata through its path, which is the
// caller's own and never the tenant's.
func (t *tree) finishRoot() error {
	root := t.open[0]
	e := root.meta
	if e == nil {
		return nil
	}
	perm := e.Perm
	if t.owners {
		if err := unix.Fchown(int(root.f.Fd()), e.UID, e.GID); err != nil {
			return err
		}
	} else {
		perm &^= unix.S_ISUID | unix.S_ISGID
	}
	if err := unix.Fchmod(int(root.f.Fd()), perm); err != nil {
		return err
	}
	return unix.UtimesNanoAt(unix.AT_FDCWD, t.root, mtime(e), unix.AT_SYMLINK_NOFOLLOW)
}

// close releases the open directories, after a failure too.
func (t *tree) close() {
	for _, d := range t.open {
		d.f.Close()
	}
	t.open = nil
}

func refuse(name, why string) error {
	return fmt.Errorf("%w: entry %q %s", ErrRefused, name, why)
}

// Clone copies the tree below src into dst, an empty directory only the
// caller can reach, and returns the directories it put entries in, for
// the caller to make durable. Entries the walk leaves out are told to
// skipped.
func Clone(dst, src string, skipped Skipped) ([]string, error) {
	t, err := newTree(dst)
	if err != nil {
		return nil, err
	}
	defer t.close()
	w := walker{openFiles: true, skipped: skipped, visit: t.put}
	if err := w.walk(src); err != nil {
		return nil, err
	}
	return t.finish()
}
