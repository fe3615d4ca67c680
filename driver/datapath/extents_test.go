package datapath

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// sparseFile makes a file of size bytes holding data only at the given
// offsets (len bytes each, never zero), holes elsewhere.
func sparseFile(t *testing.T, path string, size int64, data map[int64]int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off, n := range data {
		b := bytes.Repeat([]byte{byte(off>>12) | 1}, n)
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// capped fails a write that would take w past limit bytes: an archive that
// holds a sparse file's holes is stopped before it fills the disk.
type capped struct {
	w     io.Writer
	n     int64
	limit int64
}

func (c *capped) Write(b []byte) (int, error) {
	if c.n += int64(len(b)); c.n > c.limit {
		return 0, fmt.Errorf("the archive grew past %d bytes", c.limit)
	}
	return c.w.Write(b)
}

// allocated is what a file takes on disk (st_blocks), in bytes.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// sameContent compares two files byte for byte. What lies outside both
// files' data extents (SEEK_DATA) is holes, zeros in both, so only the
// data extents of either are read: reading 1 GiB of holes twice takes
// seconds on a busy machine.
func sameContent(t *testing.T, a, b string) {
	t.Helper()
	fa, fb := open(t, a), open(t, b)
	sa, sb := size(t, fa), size(t, fb)
	if sa != sb {
		t.Fatalf("%s holds %d bytes, %s %d", a, sa, b, sb)
	}
	for _, f := range []*os.File{fa, fb} {
		for off := int64(0); off < sa; {
			data, err := f.Seek(off, unix.SEEK_DATA)
			if errors.Is(err, unix.ENXIO) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			hole, err := f.Seek(data, unix.SEEK_HOLE)
			if err != nil {
				t.Fatal(err)
			}
			ra, rb := io.NewSectionReader(fa, data, hole-data), io.NewSectionReader(fb, data, hole-data)
			if !sameReaders(ra, rb) {
				t.Fatalf("%s and %s differ in [%d, %d)", a, b, data, hole)
			}
			off = hole
		}
	}
}

func sameReaders(a, b io.Reader) bool {
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, _ := io.ReadFull(b, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if ea != nil {
			return true
		}
	}
}

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func size(t *testing.T, f *os.File) int64 {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestArchiveKeepsHoles snapshots a 1 GiB sparse file holding 84 KiB of
// data in four extents, ending in a hole, and restores it: the archive
// takes a few KiB more than the data, not 1 GiB (a snapshot of a sparse
// 1 TiB file must not need 1 TiB), and the restored file is the same,
// byte for byte, and as sparse. It also restores an archive cut with the
// cap on extents at 3, whose last extent holds the 1 MiB hole between the
// last two as zeros.
func TestArchiveKeepsHoles(t *testing.T) {
	const size, dataBytes = 1 << 30, 84 << 10
	extents := map[int64]int{0: 4 << 10, 300 << 20: 64 << 10, 700 << 20: 8 << 10, 701 << 20: 8 << 10}
	for _, tc := range []struct {
		name     string
		extents  int
		archived int64 // bytes of content the archive holds
	}{{"all extents recorded", maxExtents, dataBytes}, {"extents capped at 3", 3, dataBytes + 1<<20}} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(n int) { maxExtents = n }(maxExtents)
			maxExtents = tc.extents
			base := t.TempDir()
			src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
			dir(t, base, "src", 0o755)
			dir(t, base, "dst", 0o755)
			sparseFile(t, filepath.Join(src, "f"), size, extents)
			tarPath := filepath.Join(base, "snapshot.tar")
			archive, err := os.Create(tarPath)
			if err != nil {
				t.Fatal(err)
			}
			defer archive.Close()
			limit := tc.archived + 64<<10 // and the headers
			if err := Archive(&capped{w: archive, limit: limit}, src, nil); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			if got := allocated(t, tarPath); got > limit {
				t.Errorf("the archive of a 1 GiB file with %d KiB of data takes %d KiB", dataBytes>>10, got>>10)
			}
			if _, err := archive.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			if _, err := Extract(dst, archive); err != nil {
				t.Fatalf("restore: %v", err)
			}
			sameContent(t, filepath.Join(src, "f"), filepath.Join(dst, "f"))
			if got, want := allocated(t, filepath.Join(dst, "f")), allocated(t, filepath.Join(src, "f")); got > want {
				t.Errorf("the restored file takes %d KiB, the source %d KiB", got>>10, want>>10)
			}
		})
	}
}

// TestOldArchiveRestoresSparse restores an archive written before sparse
// files were archived by their extents: a plain tar file holding its
// holes as zeros. A restart must not lose snapshots cut before it: such an
// archive restores the same, its zero blocks made holes.
func TestOldArchiveRestoresSparse(t *testing.T) {
	content := make([]byte, 4<<20)
	copy(content[1<<20:], bytes.Repeat([]byte("data"), 1024))
	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	for _, h := range []*tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX},
		{Name: "f", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content)), Format: tar.FormatPAX},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if _, err := Extract(dst, &archive); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dst, "f"))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("restored %d bytes, err %v; want the archive's %d", len(got), err, len(content))
	}
	if n := allocated(t, filepath.Join(dst, "f")); n > 64<<10 {
		t.Errorf("the restored file takes %d KiB for 4 KiB of data", n>>10)
	}
}
