package datapath

import (
	"bytes"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// CopySparse gives dst the content and size of src, copying only src's
// data extents (SEEK_DATA/SEEK_HOLE), so that holes stay holes: copying
// them as data would turn a 10 GiB empty block volume into 10 GiB of
// writes.
func CopySparse(dst, src *os.File) error {
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if err := copyExtents(dst, src, st.Size()); err != nil {
		return err
	}
	return dst.Truncate(st.Size())
}

// copyExtents copies the data extents of src's first size bytes to the
// same offsets of dst. A file that shrinks meanwhile gives fewer bytes;
// the caller's truncate to size makes the rest a hole, which reads as
// zeros.
func copyExtents(dst, src *os.File, size int64) error {
	return forExtents(src, size, func(from, to int64) error { return copyRange(dst, src, from, to) })
}

// forExtents calls fn with each data extent [from, to) of f's first size
// bytes, in order (SEEK_DATA/SEEK_HOLE). Where the filesystem cannot tell
// holes, the rest of the file is one extent.
func forExtents(f *os.File, size int64, fn func(from, to int64) error) error {
	for off := int64(0); off < size; {
		data, err := f.Seek(off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // no data after off
		}
		if err != nil {
			return fn(off, size) // no SEEK_DATA here: the rest is data
		}
		hole, err := f.Seek(data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		hole = min(hole, size)
		if data >= hole {
			return nil
		}
		if err := fn(data, hole); err != nil {
			return err
		}
		off = hole
	}
	return nil
}

func copyRange(dst, src *os.File, from, to int64) error {
	_, err := io.Copy(io.NewOffsetWriter(dst, from), io.NewSectionReader(src, from, to-from))
	return err
}

// holeBlock is the granularity at which writeHoles leaves zeros out.
const holeBlock = 4096

var zeroBlock [holeBlock]byte

// writeHoles writes size bytes of r to dst, leaving every block of zeros
// out, so that they read back as a hole: archives written before they
// kept holes (and data extents) may hold zeros, and a restore makes them
// holes again. The caller truncates dst to size.
func writeHoles(dst *os.File, r io.Reader, size int64) error {
	return writeHolesAt(dst, r, 0, size)
}

// writeHolesAt is writeHoles for the n bytes of dst from off.
func writeHolesAt(dst *os.File, r io.Reader, off, n int64) error {
	buf := make([]byte, min(64<<10, n))
	for end := off + n; off < end; {
		got, err := io.ReadFull(r, buf[:min(int64(len(buf)), end-off)])
		if err != nil {
			return err
		}
		if err := writeNonZero(dst, buf[:got], off); err != nil {
			return err
		}
		off += int64(got)
	}
	return nil
}

// writeNonZero writes the runs of b that are not whole zero blocks at off.
func writeNonZero(dst *os.File, b []byte, off int64) error {
	start := -1 // start of the current run of data, or -1
	for i := 0; i < len(b); i += holeBlock {
		end := min(i+holeBlock, len(b))
		zero := bytes.Equal(b[i:end], zeroBlock[:end-i])
		switch {
		case !zero && start < 0:
			start = i
		case zero && start >= 0:
			if _, err := dst.WriteAt(b[start:i], off+int64(start)); err != nil {
				return err
			}
			start = -1
		}
	}
	if start >= 0 {
		_, err := dst.WriteAt(b[start:], off+int64(start))
		return err
	}
	return nil
}
