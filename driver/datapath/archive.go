package datapath

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
)

// Archive writes the tree below dir to w as a tar archive: directories,
// regular files, symlinks and FIFOs with their mode, owner and
// modification time (PAX, so to the nanosecond), in pre-order. Entries the
// walk leaves out are told to skipped. A regular file holds the length it
// had when opened; bytes it loses meanwhile are archived as zeros. A file
// with holes is archived as its data extents (typeSparse), so that a
// sparse 1 TiB file does not become a 1 TiB archive.
func Archive(w io.Writer, dir string, skipped Skipped) error {
	tw := tar.NewWriter(w)
	walk := walker{openFiles: true, skipped: skipped, visit: func(e *Entry, content io.Reader) error {
		if err := archiveEntry(tw, e, content); err != nil {
			return fmt.Errorf("archiving %q: %w", e.Name, err)
		}
		return nil
	}}
	if err := walk.walk(dir); err != nil {
		return err
	}
	return tw.Close()
}

func archiveEntry(tw *tar.Writer, e *Entry, content io.Reader) error {
	h := header(e)
	if e.Kind != File {
		return tw.WriteHeader(h)
	}
	f := content.(*os.File) // a walk with openFiles gives the opened file
	extents, err := dataExtents(f, e.Size)
	if err != nil {
		return err
	}
	if dense(extents, e.Size) {
		extents = []extent{{0, e.Size}} // a plain tar file, as archives always held
	} else {
		sparseHeader(h, extents)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	// By offset: finding the extents moved the file's own.
	for _, x := range extents {
		if err := copyExactly(tw, io.NewSectionReader(f, x.off, x.len), x.len); err != nil {
			return err
		}
	}
	return nil
}

func header(e *Entry) *tar.Header {
	h := &tar.Header{
		Name:    e.Name,
		Mode:    int64(e.Perm),
		Uid:     e.UID,
		Gid:     e.GID,
		ModTime: e.ModTime,
		Format:  tar.FormatPAX,
	}
	switch e.Kind {
	case Dir:
		h.Typeflag, h.Name = tar.TypeDir, e.Name+"/"
	case File:
		h.Typeflag, h.Size = tar.TypeReg, e.Size
	case Symlink:
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.Target
	case FIFO:
		h.Typeflag = tar.TypeFifo
	}
	return h
}

// copyExactly copies n bytes of r to w; a file that shrank while it was
// copied gives zeros for what it lost, so the archive stays whole.
func copyExactly(w io.Writer, r io.Reader, n int64) error {
	copied, err := io.CopyN(w, r, n)
	if errors.Is(err, io.EOF) {
		_, err = io.CopyN(w, zeros{}, n-copied)
	}
	return err
}

type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// Extract restores an archive Archive wrote into dir, an empty directory
// only the caller can reach, and returns the directories it put entries
// in, for the caller to make durable. The archive's names and link targets
// are a tenant's: no entry lands outside dir, a symlink is created as it
// is and never followed, and an archive holding what Archive never writes
// (names leaving dir, hard links, devices, an entry below a symlink or a
// file, a name twice) is refused with ErrRefused rather than restored in
// part.
func Extract(dir string, r io.Reader) ([]string, error) {
	t, err := newTree(dir)
	if err != nil {
		return nil, err
	}
	defer t.close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return t.finish()
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		e, err := entryFrom(h)
		if err != nil {
			return nil, err
		}
		if e == nil {
			continue
		}
		content, err := contentOf(h, tr)
		if err != nil {
			return nil, err
		}
		if err := t.put(e, content); err != nil {
			return nil, err
		}
	}
}

// entryFrom checks an archive's header and turns it into an entry; nil for
// a header that describes none.
func entryFrom(h *tar.Header) (*Entry, error) {
	name := path.Clean(h.Name)
	if name != "." && !filepath.IsLocal(name) {
		return nil, refuse(h.Name, "leaves the volume")
	}
	if h.Uid < 0 || h.Gid < 0 || h.Mode < 0 || h.Size < 0 {
		return nil, refuse(h.Name, "has a negative owner, group, mode or size")
	}
	e := &Entry{Name: name, Perm: uint32(h.Mode) & 0o7777, UID: h.Uid, GID: h.Gid, ModTime: h.ModTime}
	switch h.Typeflag {
	case tar.TypeDir:
		e.Kind = Dir
	case tar.TypeReg:
		e.Kind, e.Size = File, h.Size
	case typeSparse:
		size, err := strconv.ParseInt(h.PAXRecords[paxSparseSize], 10, 64)
		if err != nil || size < 0 {
			return nil, refuse(h.Name, "is a sparse file without a valid size")
		}
		e.Kind, e.Size = File, size
	case tar.TypeSymlink:
		e.Kind, e.Target = Symlink, h.Linkname
	case tar.TypeFifo:
		e.Kind = FIFO
	case tar.TypeXGlobalHeader:
		return nil, nil
	case tar.TypeLink:
		return nil, refuse(h.Name, "is a hard link")
	case tar.TypeChar, tar.TypeBlock:
		return nil, refuse(h.Name, "is a device node")
	default:
		return nil, refuse(h.Name, fmt.Sprintf("has type %q", h.Typeflag))
	}
	return e, nil
}
