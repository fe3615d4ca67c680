package datapath

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// changeTree is a volume of a directory, two files, a symlink and a FIFO.
func changeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d", "f"), []byte("data\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "g"), make([]byte, 4096), 0o644))
	must(t, os.Symlink("d/f", filepath.Join(root, "l")))
	must(t, unix.Mkfifo(filepath.Join(root, "p"), 0o644))
	return root
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// noteAfterSetup returns the time to check changes from, once the coarse
// clock has moved past every stamp the setup left: a change in the same
// tick as since counts as changed, which is right for a cut and would
// make every case here report the setup.
func noteAfterSetup(t *testing.T) time.Time {
	t.Helper()
	time.Sleep(25 * time.Millisecond)
	since, err := Now()
	if err != nil {
		t.Fatal(err)
	}
	return since
}

// TestChangedSince: every change a tenant can make to a volume after the
// noted time names an entry (the changed inode, or the directory whose
// entries changed), and nothing changed names none.
func TestChangedSince(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
		want   string
	}{
		{"nothing", func(*testing.T, string) {}, ""},
		{"read", func(t *testing.T, root string) {
			_, err := os.ReadFile(filepath.Join(root, "d", "f"))
			must(t, err)
		}, ""},
		{"append", func(t *testing.T, root string) {
			f, err := os.OpenFile(filepath.Join(root, "d", "f"), os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			defer f.Close()
			_, err = f.WriteString("more\n")
			must(t, err)
		}, "d/f"},
		{"overwrite in place", func(t *testing.T, root string) {
			f, err := os.OpenFile(filepath.Join(root, "g"), os.O_WRONLY, 0)
			must(t, err)
			defer f.Close()
			_, err = f.WriteAt([]byte{1}, 100)
			must(t, err)
		}, "g"},
		{"truncate", func(t *testing.T, root string) { must(t, os.Truncate(filepath.Join(root, "g"), 10)) }, "g"},
		{"create", func(t *testing.T, root string) {
			must(t, os.WriteFile(filepath.Join(root, "d", "new"), nil, 0o644))
		}, "d"},
		{"unlink", func(t *testing.T, root string) { must(t, os.Remove(filepath.Join(root, "d", "f"))) }, "d"},
		{"rename across directories", func(t *testing.T, root string) {
			must(t, os.Rename(filepath.Join(root, "g"), filepath.Join(root, "d", "g")))
		}, "."},
		{"hard link", func(t *testing.T, root string) {
			must(t, os.Link(filepath.Join(root, "g"), filepath.Join(root, "d", "g2")))
		}, "d"}, // link(2) changes the directory it adds to, met before the inode
		{"chmod", func(t *testing.T, root string) { must(t, os.Chmod(filepath.Join(root, "g"), 0o600)) }, "g"},
		{"xattr", func(t *testing.T, root string) {
			err := unix.Setxattr(filepath.Join(root, "g"), "user.zonepath", []byte("x"), 0)
			if err == unix.ENOTSUP {
				t.Skip("no user extended attributes on this filesystem")
			}
			must(t, err)
		}, "g"},
		{"utimes to the past", func(t *testing.T, root string) {
			old := time.Unix(1e9, 0)
			must(t, os.Chtimes(filepath.Join(root, "d", "f"), old, old))
		}, "d/f"},
		{"symlink replaced", func(t *testing.T, root string) {
			must(t, os.Remove(filepath.Join(root, "l")))
			must(t, os.Symlink("g", filepath.Join(root, "l")))
		}, "."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := changeTree(t)
			since := noteAfterSetup(t)
			tt.change(t, root)
			got, err := ChangedSince(root, since)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ChangedSince after %s: %q, want %q", tt.name, got, tt.want)
			}
		})
	}
}

// TestChangedSinceVanished: an entry removed while the walk is in its
// directory, after the directory was looked at, is a change.
func TestChangedSinceVanished(t *testing.T) {
	root := changeTree(t)
	since := noteAfterSetup(t)
	afterList = func(dir string) {
		if dir == "d" {
			must(t, os.Remove(filepath.Join(root, "d", "f")))
		}
	}
	t.Cleanup(func() { afterList = nil })
	got, err := ChangedSince(root, since)
	if err != nil {
		t.Fatal(err)
	}
	if got != "d/f" {
		t.Errorf("ChangedSince with d/f removed during the walk: %q, want \"d/f\"", got)
	}
}

// TestChangedSinceImage: a block volume's image is its own root.
func TestChangedSinceImage(t *testing.T) {
	img := filepath.Join(t.TempDir(), "v.img")
	must(t, os.WriteFile(img, make([]byte, 8192), 0o644))
	since := noteAfterSetup(t)
	if got, err := ChangedSince(img, since); err != nil || got != "" {
		t.Errorf("untouched image: %q, %v; want \"\"", got, err)
	}
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte{1}, 4096)
	must(t, err)
	must(t, f.Close())
	if got, err := ChangedSince(img, since); err != nil || got != "." {
		t.Errorf("written image: %q, %v; want \".\"", got, err)
	}
}

// mappedStoreSeen makes a page of a file in dir writable through a shared
// mapping before since, flushes after since, stores through the mapping
// again and tells whether ChangedSince saw the store.
func mappedStoreSeen(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.CreateTemp(dir, "mapped")
	must(t, err)
	defer os.Remove(f.Name())
	defer f.Close()
	must(t, f.Truncate(4096))
	mem, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(t, err)
	defer unix.Munmap(mem)
	mem[0] = 1 // faults: the page is dirty and writable from here on
	since := noteAfterSetup(t)
	must(t, Flush(f.Name()))
	mem[1] = 2
	got, err := ChangedSince(f.Name(), since)
	must(t, err)
	return got != ""
}

// TestChangedSinceMappedStore: a store through a shared mapping made
// writable before since is seen once Flush ran after since: writing the
// page back write-protects it, so the store faults and stamps ctime.
func TestChangedSinceMappedStore(t *testing.T) {
	dir := t.TempDir()
	if hides, err := HidesMappedStores(dir); err != nil || hides {
		t.Skipf("the test directory's filesystem hides mapped stores (%v): nothing to see", err)
	}
	if !mappedStoreSeen(t, dir) {
		t.Error("a store through a shared mapping after Flush was not seen")
	}
}

// TestHidesMappedStores: a filesystem where a store through a shared
// mapping goes unseen, flush or not, is one HidesMappedStores names, so
// that group cuts there fall back to refusing writers. /dev/shm is tmpfs
// on Linux hosts, the case the fallback is for.
func TestHidesMappedStores(t *testing.T) {
	for _, dir := range []string{t.TempDir(), "/dev/shm"} {
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		hides, err := HidesMappedStores(dir)
		must(t, err)
		if seen := mappedStoreSeen(t, dir); !seen && !hides {
			t.Errorf("%s: a store through a mapping goes unseen, and HidesMappedStores says false", dir)
		}
	}
	if _, err := HidesMappedStores(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("HidesMappedStores of a missing path: no error")
	}
}
