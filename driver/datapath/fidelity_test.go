package datapath

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// outcome is what a copy gives back for an entry, as the README's table
// says it; check proves it.
type outcome string

const (
	kept       outcome = "kept"
	keptLink   outcome = "kept as a symlink, same target"
	keptApart  outcome = "kept as separate files"
	keptSparse outcome = "kept, holes stay holes"
	// A restore writes the data extents an archive holds, leaving out the
	// blocks of zeros in them (and in archives cut before they held holes).
	madeSparse outcome = "kept, holes stay holes, zero blocks become holes"
	skipped    outcome = "skipped, one log line"
	// Entries that change during a copy are common in a busy volume.
	skippedQuietly outcome = "skipped, logged at -v=2"
)

// fidelityCases is the table of driver/README.md's "Volume data" section:
// what a source volume holds, and what a restore of its snapshot and a
// clone of it give back. Each case makes the entry "e" (and what it needs)
// in a source volume's root.
var fidelityCases = []struct {
	holds          string
	make           func(t *testing.T, root string)
	restore, clone outcome
}{
	{"regular file, mode 0640", func(t *testing.T, root string) { file(t, root, "e", "data", 0o640) }, kept, kept},
	{"file with setuid, setgid and sticky bits (07755)", func(t *testing.T, root string) { file(t, root, "e", "#!/bin/sh\n", 0o7755) }, kept, kept},
	{"directory with entries, mode 0750", func(t *testing.T, root string) {
		dir(t, root, "e", 0o700)
		file(t, root, "e/f", "data", 0o600)
		dir(t, root, "e/g", 0o700)
		chmod(t, root, "e", 0o750)
	}, kept, kept},
	{"directory with entries, mode 0500 (no write permission)", func(t *testing.T, root string) {
		dir(t, root, "e", 0o700)
		file(t, root, "e/f", "data", 0o400)
		chmod(t, root, "e", 0o500)
	}, kept, kept},
	{"empty directory, mode 0700", func(t *testing.T, root string) { dir(t, root, "e", 0o700) }, kept, kept},
	{"the volume's root directory: mode 02775, owner, mtime", func(t *testing.T, root string) {
		chmod(t, root, ".", 0o2775)
		file(t, root, "e", "data", 0o644)
	}, kept, kept},
	{"symlink to a file in the volume (`f`)", func(t *testing.T, root string) {
		file(t, root, "f", "data", 0o644)
		symlink(t, root, "e", "f")
	}, keptLink, keptLink},
	{"symlink to an absolute path outside the volume", func(t *testing.T, root string) {
		symlink(t, root, "e", filepath.Join(filepath.Dir(root), "outside", "secret"))
	}, keptLink, keptLink},
	{"symlink leaving the volume by `..`", func(t *testing.T, root string) { symlink(t, root, "e", "../outside") }, keptLink, keptLink},
	{"dangling symlink", func(t *testing.T, root string) { symlink(t, root, "e", "no/such/file") }, keptLink, keptLink},
	{"FIFO, mode 0620", func(t *testing.T, root string) {
		if err := unix.Mkfifo(filepath.Join(root, "e"), 0o600); err != nil {
			t.Fatal(err)
		}
		chmod(t, root, "e", 0o620)
	}, kept, kept},
	{"unix socket", func(t *testing.T, root string) {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(root, "e"), Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close()
	}, skipped, skipped},
	{"device node", func(t *testing.T, root string) {
		err := unix.Mknod(filepath.Join(root, "e"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3)))
		if errors.Is(err, unix.EPERM) {
			t.Skip("making a device node needs CAP_MKNOD")
		}
		if err != nil {
			t.Fatal(err)
		}
	}, skipped, skipped},
	{"sparse file: 8 MiB, 4 KiB of data at 1 MiB", func(t *testing.T, root string) {
		f, err := os.Create(filepath.Join(root, "e"))
		if err == nil {
			_, err = f.WriteAt(bytes.Repeat([]byte{'x'}, 4096), 1<<20)
		}
		if err == nil {
			err = f.Truncate(8 << 20)
		}
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}, madeSparse, keptSparse},
	{"file removed between the listing and its copy", func(t *testing.T, root string) {
		file(t, root, "e", "data", 0o644)
		afterList = func(dir string) {
			if dir == "." {
				os.Remove(filepath.Join(root, "e"))
			}
		}
	}, skippedQuietly, skippedQuietly},
	{"two hard links to one file", func(t *testing.T, root string) {
		file(t, root, "e", "data", 0o644)
		if err := os.Link(filepath.Join(root, "e"), filepath.Join(root, "e2")); err != nil {
			t.Fatal(err)
		}
	}, keptApart, keptApart},
}

// TestFidelity makes each case's source volume twice, restores a snapshot
// of one and clones the other, and checks that each copy gives back what
// the table says, comparing type, mode, owner, modification time and
// content or target of every entry with the source's.
func TestFidelity(t *testing.T) {
	for _, tc := range fidelityCases {
		t.Run(tc.holds, func(t *testing.T) {
			for _, op := range []struct {
				name string
				want outcome
				copy func(dst, src string, skipped Skipped) error
			}{
				{"restore", tc.restore, restoreCopy},
				{"clone", tc.clone, func(dst, src string, skipped Skipped) error { _, err := Clone(dst, src, skipped); return err }},
			} {
				t.Run(op.name, func(t *testing.T) {
					defer func() { afterList = nil }()
					base := t.TempDir()
					src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
					dir(t, base, "src", 0o755)
					dir(t, base, "dst", 0o755)
					dir(t, base, "outside", 0o755)
					file(t, base, "outside/secret", "SENTINEL", 0o644)
					tc.make(t, src)
					stamp(t, src)
					before := capture(t, src)
					skips := map[string]error{}
					if err := op.copy(dst, src, func(name string, why error) { skips[name] = why }); err != nil {
						t.Fatalf("%s: %v", op.name, err)
					}
					op.want.check(t, before, capture(t, dst), skips)
				})
			}
		})
	}
}

func restoreCopy(dst, src string, skipped Skipped) error {
	var archive bytes.Buffer
	if err := Archive(&archive, src, skipped); err != nil {
		return err
	}
	_, err := Extract(dst, &archive)
	return err
}

// check compares a copy with its source. Entries other than "e" (and its
// hard link "e2") must be kept as they are in every case.
func (o outcome) check(t *testing.T, src, dst map[string]state, skips map[string]error) {
	t.Helper()
	want := map[string]state{}
	for name, s := range src {
		want[name] = s.expected()
	}
	switch o {
	case skipped, skippedQuietly:
		delete(want, "e")
		reasons := map[outcome][]error{skipped: {ErrSocket, ErrDevice}, skippedQuietly: {ErrVanished}}[o]
		if why := skips["e"]; !slices.ContainsFunc(reasons, func(r error) bool { return errors.Is(why, r) }) {
			t.Errorf("skipped e for %v, want one of %v", why, reasons)
		}
	case keptApart:
		if dst["e"].ino == dst["e2"].ino {
			t.Errorf("e and e2 are one file in the copy, want separate files")
		}
	case keptSparse, madeSparse:
		if s, d := src["e"], dst["e"]; d.blocks > s.blocks {
			t.Errorf("the copy of the sparse file takes %d blocks, the source %d", d.blocks, s.blocks)
		}
	}
	for _, name := range sortedKeys(want, dst) {
		if w, d := want[name], dst[name]; !w.same(d) {
			t.Errorf("%s: copy holds %+v, want %+v", name, d, w)
		}
	}
	if o != skipped && o != skippedQuietly && len(skips) > 0 {
		t.Errorf("skipped %v, want nothing skipped", skips)
	}
}

// state is what a test compares of an entry.
type state struct {
	mode            fs.FileMode // type bits
	perm            uint32      // 07777
	uid, gid        uint32
	mtime           int64
	content, target string // a file's SHA-256, a symlink's target
	size, blocks    int64
	ino             uint64
	present         bool
}

// expected is what a copy made by this process gives: without root,
// entries are its own and lose setuid and setgid.
func (s state) expected() state {
	if os.Geteuid() != 0 {
		s.perm &^= unix.S_ISUID | unix.S_ISGID
		s.uid, s.gid = uint32(os.Geteuid()), uint32(os.Getegid())
	}
	return s
}

func (s state) same(d state) bool {
	s.ino, d.ino, s.blocks, d.blocks = 0, 0, 0, 0
	if s.mode&fs.ModeSymlink != 0 { // a symlink's mode is always 0777
		s.perm, d.perm = 0, 0
	}
	return s == d
}

func capture(t *testing.T, root string) map[string]state {
	t.Helper()
	states := map[string]state{}
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			return err
		}
		s := state{mode: e.Type(), perm: st.Mode & 0o7777, uid: st.Uid, gid: st.Gid, mtime: st.Mtim.Nano(),
			size: st.Size, blocks: st.Blocks, ino: st.Ino, present: true}
		switch {
		case e.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			s.content = fmt.Sprintf("%x", sha256.Sum256(data))
		case e.Type() == fs.ModeSymlink:
			if s.target, err = os.Readlink(path); err != nil {
				return err
			}
		case e.IsDir():
			s.size = 0 // a directory's size depends on its history
		}
		rel, _ := filepath.Rel(root, path)
		states[filepath.ToSlash(rel)] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return states
}

// stamp gives every entry a distinct owner (when root) and modification
// time, deepest first, so that a copy keeping neither is caught.
func stamp(t *testing.T, root string) {
	t.Helper()
	var paths []string
	if err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		paths = append(paths, path)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.Reverse(paths)
	for i, path := range paths {
		if os.Geteuid() == 0 {
			if err := os.Lchown(path, 1234+i, 5678+i); err != nil {
				t.Fatal(err)
			}
		}
		when := unix.NsecToTimespec(time.Date(2001, 2, 3, 4, 5, 6, 123456789+i, time.UTC).UnixNano())
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{when, when}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
	// Owner changes clear setuid and setgid: set the modes again.
	for path, perm := range modes {
		if strings.HasPrefix(path, root) {
			if err := unix.Fchmodat(unix.AT_FDCWD, path, perm, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// modes remembers the modes tests set, for stamp to set them again.
var modes = map[string]uint32{}

func file(t *testing.T, root, name, content string, perm uint32) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, root, name, perm)
}

func dir(t *testing.T, root, name string, perm uint32) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(root, name), 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, root, name, perm)
}

func chmod(t *testing.T, root, name string, perm uint32) {
	t.Helper()
	path := filepath.Join(root, name)
	if err := unix.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
	modes[path] = perm
}

func symlink(t *testing.T, root, name, target string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
		t.Fatal(err)
	}
}

func sortedKeys(maps ...map[string]state) []string {
	var keys []string
	for _, m := range maps {
		for k := range m {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// TestREADMEFidelityTable checks that driver/README.md prints the table
// TestFidelity proves.
func TestREADMEFidelityTable(t *testing.T) {
	var b strings.Builder
	b.WriteString("| the source volume holds | a restore of its snapshot gives | a clone gives |\n|---|---|---|\n")
	for _, tc := range fidelityCases {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", tc.holds, tc.restore, tc.clone)
	}
	checkREADME(t, b.String())
}

func checkREADME(t *testing.T, table string) {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), table) {
		t.Errorf("driver/README.md does not hold this table, which the tests prove; put it there:\n%s", table)
	}
}
