package datapath

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// A sparse file's entry in an archive. archive/tar reads GNU and PAX
// sparse files but cannot write them (golang.org/issue/22735), so a file
// with holes is an entry of this vendor type (POSIX reserves 'A'-'Z' for
// vendor extensions) whose content is its data extents, one after
// another, and whose PAX records say where they go and how long the file
// is. A driver from before this format refuses the type (ErrRefused)
// rather than restore packed extents as a file's content; archives from
// before it hold only tar.TypeReg files, read as they always were.
const (
	typeSparse = 'Z'
	// paxSparseSize is the file's length, holes included.
	paxSparseSize = "ZONEPATH.sparse.size"
	// paxSparseMap is the data extents: offset,length,offset,length,...
	// in increasing, non-overlapping order.
	paxSparseMap = "ZONEPATH.sparse.map"
)

// maxExtents bounds the extents an entry records: archive/tar reads a PAX
// header of at most 1 MiB, and a map of 16,384 extents of a 1 PiB file
// takes under 600 KiB. A file with more keeps the rest as one extent,
// its holes archived as zeros (which a restore makes holes again). A
// variable so that tests can lower it.
var maxExtents = 16384

// extent is a run of a file's data.
type extent struct{ off, len int64 }

// dataExtents lists the data extents of f's first size bytes, at most
// maxExtents of them.
func dataExtents(f *os.File, size int64) ([]extent, error) {
	var xs []extent
	err := forExtents(f, size, func(from, to int64) error {
		if len(xs) == maxExtents {
			xs[len(xs)-1].len = to - xs[len(xs)-1].off
		} else {
			xs = append(xs, extent{from, to - from})
		}
		return nil
	})
	return xs, err
}

// dense reports whether extents cover a file of size bytes without a
// hole, and then the file is archived as a plain tar file.
func dense(xs []extent, size int64) bool {
	return size == 0 || len(xs) == 1 && xs[0] == extent{0, size}
}

// sparseHeader turns a file's header into a typeSparse one.
func sparseHeader(h *tar.Header, xs []extent) {
	var m strings.Builder
	var packed int64
	for i, x := range xs {
		if i > 0 {
			m.WriteByte(',')
		}
		fmt.Fprintf(&m, "%d,%d", x.off, x.len)
		packed += x.len
	}
	h.Typeflag = typeSparse
	h.PAXRecords = map[string]string{paxSparseSize: strconv.FormatInt(h.Size, 10), paxSparseMap: m.String()}
	h.Size = packed
}

// packed is the content of a typeSparse entry: r holds the extents' data
// one after another.
type packed struct {
	r       io.Reader
	extents []extent
}

// errPacked guards a packed content from being read as a file's bytes.
var errPacked = errors.New("a sparse entry's content is written by its extents, not read as a stream")

// Read fails: the stream r holds is the extents, not the file's bytes, so
// only writePacked may consume it.
func (*packed) Read([]byte) (int, error) { return 0, errPacked }

// contentOf is what a restore writes into a File entry: the archive's
// data as it is, or, for a typeSparse entry, its extents at their offsets.
func contentOf(h *tar.Header, r io.Reader) (io.Reader, error) {
	if h.Typeflag != typeSparse {
		return r, nil
	}
	xs, err := parseExtents(h)
	if err != nil {
		return nil, err
	}
	return &packed{r: r, extents: xs}, nil
}

// parseExtents reads a typeSparse entry's map and refuses one that does not
// describe its data: extents out of order, overlapping, past the file's
// end, or not as long as the entry.
func parseExtents(h *tar.Header) ([]extent, error) {
	size, _ := strconv.ParseInt(h.PAXRecords[paxSparseSize], 10, 64) // checked by entryFrom
	var fields []string
	if m := h.PAXRecords[paxSparseMap]; m != "" {
		fields = strings.Split(m, ",")
	}
	if len(fields)%2 != 0 || len(fields)/2 > maxExtents {
		return nil, refuse(h.Name, "has a sparse map of odd or too many fields")
	}
	var xs []extent
	var end, total int64
	for i := 0; i < len(fields); i += 2 {
		off, err1 := strconv.ParseInt(fields[i], 10, 64)
		n, err2 := strconv.ParseInt(fields[i+1], 10, 64)
		if err1 != nil || err2 != nil || off < end || n <= 0 || n > size-off {
			return nil, refuse(h.Name, "has a sparse map out of order or past the file's end")
		}
		xs = append(xs, extent{off, n})
		end, total = off+n, total+n
	}
	if total != h.Size {
		return nil, refuse(h.Name, "has a sparse map whose extents are not its data")
	}
	return xs, nil
}

// writePacked writes a typeSparse entry's extents at their offsets of dst,
// leaving zero blocks out; the holes between them are never written. The
// caller truncates dst to the file's size.
func writePacked(dst *os.File, p *packed) error {
	for _, x := range p.extents {
		if err := writeHolesAt(dst, p.r, x.off, x.len); err != nil {
			return err
		}
	}
	return nil
}
