package datapath

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// copyOps are the two ways a volume's tree is copied: a snapshot restored,
// and a clone.
var copyOps = []struct {
	name string
	copy func(dst, src string) error
}{
	{"restore", func(dst, src string) error { return restoreCopy(dst, src, nil) }},
	{"clone", func(dst, src string) error { _, err := Clone(dst, src, nil); return err }},
}

// TestSwapBetweenStatAndOpen replaces a file and a directory by symlinks
// to a sentinel outside the volume in the narrowest window there is:
// after the walk looked at the entry, before it opens it for reading. The
// copy must hold what was looked at (the tenant's file, and the directory,
// empty since the swap removed it), never what the symlinks point to. The
// O_PATH descriptor the walk looks with pins the inode it then reads;
// without it, the clone reads the sentinel.
func TestSwapBetweenStatAndOpen(t *testing.T) {
	for _, op := range copyOps {
		t.Run(op.name, func(t *testing.T) {
			base := t.TempDir()
			src, dst, outside := filepath.Join(base, "src"), filepath.Join(base, "dst"), filepath.Join(base, "outside")
			for _, d := range []string{src, dst, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			file(t, base, "outside/secret", "SENTINEL", 0o644)
			file(t, src, "f", "tenant", 0o644)
			dir(t, src, "d", 0o755)
			file(t, src, "d/inner", "tenant", 0o644)
			swapped := map[string]string{"f": filepath.Join(outside, "secret"), "d": outside}
			afterStat = func(name string) {
				target, ok := swapped[name]
				if !ok {
					return
				}
				delete(swapped, name)
				if err := os.RemoveAll(filepath.Join(src, name)); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
					t.Error(err)
				}
			}
			defer func() { afterStat = nil }()
			if err := op.copy(dst, src); err != nil {
				t.Fatal(err)
			}
			if len(swapped) > 0 {
				t.Fatalf("the walk never opened %v: the swap did not happen", swapped)
			}
			err := filepath.WalkDir(dst, func(path string, e os.DirEntry, err error) error {
				if err != nil || !e.Type().IsRegular() {
					return err
				}
				data, err := os.ReadFile(path)
				if err == nil && strings.Contains(string(data), "SENTINEL") {
					t.Errorf("%s in the %s holds the sentinel from outside the volume", path, op.name)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			checkLookedAt(t, op.name, dst)
			if st, err := os.Lstat(filepath.Join(dst, "d")); err != nil || !st.IsDir() {
				t.Errorf("d in the %s: %v, err %v; want the directory as looked at", op.name, st, err)
			}
		})
	}
}

// TestFIFOSwappedInIsNeverOpened swaps a regular file for a FIFO after the
// walk looked at it and before it opens it, as a tenant can, and proves
// the walk never opens the FIFO: a writer blocked opening the FIFO wakes
// the moment anything opens it for reading (even O_NONBLOCK), so it stays
// blocked unless the walk opened it. Opening what was swapped in is what
// must not happen: a device's open can act on it (a tape rewinds), a
// FIFO's wakes its writer. The copy holds the file that was looked at.
func TestFIFOSwappedInIsNeverOpened(t *testing.T) {
	for _, op := range copyOps {
		t.Run(op.name, func(t *testing.T) {
			base := t.TempDir()
			src, dst := filepath.Join(base, "src"), filepath.Join(base, "dst")
			dir(t, base, "src", 0o755)
			dir(t, base, "dst", 0o755)
			file(t, src, "f", "tenant", 0o644)
			fifo := filepath.Join(src, "f")
			writer := make(chan error, 1)
			afterStat = func(name string) {
				if name != "f" {
					return
				}
				afterStat = nil
				if err := os.Remove(fifo); err != nil {
					t.Error(err)
				}
				if err := unix.Mkfifo(fifo, 0o666); err != nil {
					t.Error(err)
				}
				awaitBlockedWriter(t, fifo, writer)
			}
			defer func() { afterStat = nil }()
			if err := op.copy(dst, src); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-writer:
				t.Errorf("the %s opened the FIFO swapped in (its writer woke, err %v)", op.name, err)
			case <-time.After(500 * time.Millisecond):
				// Still blocked: release it by opening the FIFO here.
				r, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
				if err != nil {
					t.Fatal(err)
				}
				<-writer
				r.Close()
			}
			checkLookedAt(t, op.name, dst)
		})
	}
}

// awaitBlockedWriter starts a writer opening fifo, which blocks until a
// reader opens it, and returns once the writer's thread sleeps in that
// openat: a reader's open from then on wakes it.
func awaitBlockedWriter(t *testing.T, fifo string, opened chan<- error) {
	tids := make(chan int, 1)
	go func() {
		runtime.LockOSThread() // the thread that blocks is the one watched
		tids <- unix.Gettid()
		fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		opened <- err
	}()
	syscall := fmt.Sprintf("/proc/self/task/%d/syscall", <-tids)
	want := strconv.Itoa(unix.SYS_OPENAT) + " "
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(syscall); err == nil && strings.HasPrefix(string(b), want) {
			return
		}
	}
	t.Fatalf("the FIFO's writer never blocked in openat")
}

// checkLookedAt checks that the copy dst holds f as the walk looked at it:
// the tenant's regular file, not what was swapped in.
func checkLookedAt(t *testing.T, op, dst string) {
	t.Helper()
	f := filepath.Join(dst, "f")
	if st, err := os.Lstat(f); err != nil || !st.Mode().IsRegular() {
		t.Errorf("f in the %s: %v, err %v; want the tenant's regular file as looked at", op, st, err)
		return
	}
	if data, err := os.ReadFile(f); err != nil || string(data) != "tenant" {
		t.Errorf("f in the %s: %q, err %v; want the tenant's file as looked at", op, data, err)
	}
}
