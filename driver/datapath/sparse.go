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
	for off := int64(0); off < size; {
		data, err := src.Seek(off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // no data after off
		}
		if err != nil {
			return copyRange(dst, src, off, size) // no SEEK_DATA here: copy the rest
		}
		hole, err := src.Seek(data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		hole = min(hole, size)
		if data >= hole {
			return nil
		}
		if err := copyRange(dst, src, data, hole); err != nil {
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
// out, so that they read back as a hole: an archive holds holes as zeros,
// and a restore makes them holes again. The caller truncates dst to size.
func writeHoles(dst *os.File, r io.Reader, size int64) error {
	buf := make([]byte, 64<<10)
	for off := int64(0); off < size; {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if err != nil {
			return err
		}
		if err := writeNonZero(dst, buf[:n], off); err != nil {
			return err
		}
		off += int64(n)
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
