package datapath

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// refusalCases are archives Archive never writes; a restore refuses each
// whole (ErrRefused) rather than restore it in part. Their names and link
// targets are what a tenant controls; the entry types are ours.
var refusalCases = []struct {
	holds   string
	entries []*tar.Header
}{
	{"an entry named `../x`", []*tar.Header{reg("../x")}},
	{"an entry named `/x`", []*tar.Header{reg("/x")}},
	{"an entry named `a/../../x`", []*tar.Header{dirH("a"), reg("a/../../x")}},
	{"a hard link", []*tar.Header{reg("f"), {Name: "e", Typeflag: tar.TypeLink, Linkname: "f"}}},
	{"a character or block device", []*tar.Header{{Name: "e", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}},
	{"an entry below a symlink leaving the volume (`l` → outside, then `l/x`)", []*tar.Header{link("l", "OUTSIDE"), reg("l/x")}},
	{"an entry below a symlink staying inside (`l` → `.`, then `l/x`)", []*tar.Header{link("l", "."), reg("l/x")}},
	{"an entry below a file", []*tar.Header{reg("f"), reg("f/x")}},
	{"an entry without its directory", []*tar.Header{reg("a/x")}},
	{"a name twice", []*tar.Header{reg("f"), reg("f")}},
	{"a directory's entry after another directory's", []*tar.Header{dirH("a"), dirH("b"), reg("a/x")}},
	{"a symlink without a target", []*tar.Header{link("l", "")}},
	{"a root that is not a directory", []*tar.Header{reg(".")}},
	{"a sparse file whose extents run past its end", []*tar.Header{sparseH("f", 8, "4,8")}},
	{"a sparse file whose extents overlap", []*tar.Header{sparseH("f", 16, "0,4,2,4")}},
	{"a sparse file whose extents are not its data", []*tar.Header{sparseH("f", 16, "0,4", 5)}},
}

// sparseH is a sparse file's header: size bytes, the extents m of its map,
// and as much data as they say unless data is given.
func sparseH(name string, size int64, m string, data ...int64) *tar.Header {
	h := &tar.Header{Name: name, Typeflag: typeSparse, Mode: 0o644, Format: tar.FormatPAX,
		PAXRecords: map[string]string{paxSparseSize: fmt.Sprint(size), paxSparseMap: m}}
	for i, f := range strings.Split(m, ",") {
		if n, _ := strconv.ParseInt(f, 10, 64); i%2 == 1 {
			h.Size += n
		}
	}
	if len(data) > 0 {
		h.Size = data[0]
	}
	return h
}

func reg(name string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 1}
}
func dirH(name string) *tar.Header {
	return &tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755}
}
func link(name, target string) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}
}

// TestRestoreRefuses restores each refused archive and checks it fails
// with ErrRefused and that nothing was written outside the new volume.
func TestRestoreRefuses(t *testing.T) {
	for _, tc := range refusalCases {
		t.Run(tc.holds, func(t *testing.T) {
			base := t.TempDir()
			dst, outside := filepath.Join(base, "vol", "new"), filepath.Join(base, "outside")
			for _, d := range []string{dst, outside} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var archive bytes.Buffer
			tw := tar.NewWriter(&archive)
			for _, h := range tc.entries {
				h.Linkname = strings.ReplaceAll(h.Linkname, "OUTSIDE", outside)
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
				if h.Typeflag == tar.TypeReg || h.Typeflag == typeSparse {
					tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
				}
			}
			tw.Close()
			_, err := Extract(dst, &archive)
			if !errors.Is(err, ErrRefused) {
				t.Errorf("restore: %v, want %v", err, ErrRefused)
			}
			for _, d := range []string{outside, filepath.Dir(dst)} {
				entries, _ := os.ReadDir(d)
				if len(entries) > 0 && !(d == filepath.Dir(dst) && len(entries) == 1) {
					t.Errorf("the restore wrote into %s: %v", d, entries)
				}
			}
		})
	}
}

// TestREADMERefusalTable checks that driver/README.md lists the archives a
// restore refuses, as TestRestoreRefuses proves.
func TestREADMERefusalTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| the snapshot's archive holds | a restore |\n|---|---|\n")
	for _, tc := range refusalCases {
		fmt.Fprintf(&b, "| %s | refused |\n", tc.holds)
	}
	checkREADME(t, b.String())
}

// TestAbbreviate keeps a deep path's first and last levels: a status
// message holding all 1,025 would be longer than an event can show.
func TestAbbreviate(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"a", "a"},
		{"a/b/c/d/e/f/g/h", "a/b/c/d/e/f/g/h"},
		{"a/b/c/d/e/f/g/h/i", "a/b/c/d/…(1 more)…/f/g/h/i"},
		{strings.Repeat("d/", 1024) + "x", "d/d/d/d/…(1017 more)…/d/d/d/x"},
	} {
		if got := abbreviate(tt.name); got != tt.want {
			t.Errorf("abbreviate(%.40q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestDepth checks that a tree nested as deep as the limit is copied and
// one level more refused, by clone, snapshot and usage alike, and that a
// restore refuses to nest deeper too.
func TestDepth(t *testing.T) {
	defer func(d int) { maxDepth = d }(maxDepth)
	maxDepth = 16
	for _, tt := range []struct {
		depth   int
		wantErr error
	}{{maxDepth, nil}, {maxDepth + 1, ErrTooDeep}} {
		t.Run(fmt.Sprint(tt.depth), func(t *testing.T) {
			src := t.TempDir()
			nest(t, src, tt.depth)
			dst := t.TempDir()
			_, err := Clone(dst, src, nil)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("clone: %v, want %v", err, tt.wantErr)
			}
			var archive bytes.Buffer
			if err := Archive(&archive, src, nil); !errors.Is(err, tt.wantErr) {
				t.Errorf("snapshot: %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				if _, err := Extract(t.TempDir(), &archive); err != nil {
					t.Errorf("restore: %v", err)
				}
			}
			if _, inodes, err := Usage(src); !errors.Is(err, tt.wantErr) || err == nil && inodes != int64(tt.depth+1) {
				t.Errorf("usage: %d inodes, %v; want %d, %v", inodes, err, tt.depth+1, tt.wantErr)
			}
			if tt.wantErr != nil {
				maxDepth++ // an archive cut where the limit was higher
				archive.Reset()
				err := Archive(&archive, src, nil)
				maxDepth--
				if err != nil {
					t.Fatal(err)
				}
				if _, err := Extract(t.TempDir(), &archive); !errors.Is(err, tt.wantErr) {
					t.Errorf("restore: %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

// nest makes depth directories, each in the one before, one name at a
// time: their path is longer than PATH_MAX.
func nest(t *testing.T, root string, depth int) {
	t.Helper()
	d, err := openDirAt(unix.AT_FDCWD, root)
	if err != nil {
		t.Fatal(err)
	}
	for range depth {
		if err := unix.Mkdirat(int(d.Fd()), "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := openDirAt(int(d.Fd()), "d")
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		d = next
	}
	d.Close()
}
