package datapath

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Kind is an entry's type; only these are copied.
type Kind uint8

const (
	Dir Kind = iota + 1
	File
	Symlink
	FIFO
)

// Entry is one entry of a volume tree as a copy records it.
type Entry struct {
	// Name is the slash-separated path below the root, "." for the root.
	Name string
	Kind Kind
	// Perm holds the permission bits with setuid, setgid and sticky (07777).
	Perm     uint32
	UID, GID int
	ModTime  time.Time
	// Size is a File's length when it was opened.
	Size int64
	// Target is a Symlink's target, verbatim: never resolved.
	Target string
	// ChangeTime is the inode's status change time (ctime). Archives do
	// not hold it: it tells ChangedSince what a tenant touched.
	ChangeTime time.Time
}

// MaxDepth is how deeply directories may nest below a volume's root: a walk
// holds one descriptor per level.
const MaxDepth = 1024

// maxDepth is MaxDepth, lowered by tests: a thousand mkdirs take seconds.
var maxDepth = MaxDepth

// Why a walk leaves an entry out. Skipped is told of each.
var (
	ErrSocket   = errors.New("a unix socket, which no copy can hold")
	ErrDevice   = errors.New("a device node, which is never copied")
	ErrVanished = errors.New("removed while the volume was being copied")
)

// Skipped is told of each entry a walk leaves out, and why.
type Skipped func(name string, why error)

var (
	// ErrTooDeep fails a copy of a tree nested deeper than MaxDepth.
	ErrTooDeep = fmt.Errorf("directories nest deeper than %d levels", MaxDepth)
	// ErrRefused fails a restore from an archive holding what Archive
	// never writes: such an archive cannot be restored faithfully.
	ErrRefused = errors.New("refusing to restore the archive")
)

func entryOf(name string, st *unix.Stat_t) *Entry {
	e := &Entry{
		Name:       name,
		Perm:       st.Mode & 0o7777,
		UID:        int(st.Uid),
		GID:        int(st.Gid),
		ModTime:    time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		ChangeTime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Kind = Dir
	case unix.S_IFREG:
		e.Kind, e.Size = File, st.Size
	case unix.S_IFLNK:
		e.Kind = Symlink
	case unix.S_IFIFO:
		e.Kind = FIFO
	}
	return e
}

// join names an entry below the directory dir ("." for the root).
func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
