package loopdev_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/loopdev"
)

// owner is the owner the tests attach for.
const owner = "zonepath-test"

// requireLoop skips a test that needs real loop devices where this
// process cannot attach one (not root, or no /dev/loop-control).
func requireLoop(t *testing.T) {
	t.Helper()
	if err := loopdev.Probe(t.TempDir()); err != nil {
		t.Skipf("needs loop devices (root and a working /dev/loop-control): %v", err)
	}
}

// backingFile makes a sparse file of size bytes, open read-write.
func backingFile(t *testing.T, size int64) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "vol.img"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return f
}

// attach attaches f and detaches it when the test ends, whatever it did.
func attach(t *testing.T, f *os.File) loopdev.Device {
	t.Helper()
	d, err := loopdev.Attach(f, owner, loopdev.ReadWrite)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Detach(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return d
}

// backingOf is what sysfs says device n is attached to, "" when nothing.
func backingOf(n int) string {
	b, err := os.ReadFile(filepath.Join("/sys/block", "loop"+strconv.Itoa(n), "loop", "backing_file"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func TestAttachFindDetach(t *testing.T) {
	requireLoop(t)
	f := backingFile(t, 1<<20)
	d := attach(t, f)
	var st unix.Stat_t
	if err := unix.Stat(d.Path(), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != d.Devno {
		t.Fatalf("%s: stat %+v, %v; want the block device %d:%d", d.Path(), st, err, unix.Major(d.Devno), unix.Minor(d.Devno))
	}
	if size, err := d.Size(); err != nil || size != 1<<20 {
		t.Errorf("device size %d, %v; want %d", size, err, 1<<20)
	}
	found, ok, err := loopdev.Find(f, owner, loopdev.ReadWrite)
	if err != nil || !ok || found != d {
		t.Errorf("Find = %v, %v, %v; want %v", found, ok, err, d)
	}
	if _, ok, err := loopdev.Find(f, "another-node", loopdev.ReadWrite); ok || err != nil {
		t.Errorf("Find for another owner = %v, %v; want none: the device is %s's", ok, err, owner)
	}
	if got := backingOf(d.Number); got != f.Name() {
		t.Errorf("sysfs: %s is backed by %q, want %q", d.Path(), got, f.Name())
	}
	if err := d.Detach(); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	if got := backingOf(d.Number); got != "" {
		t.Errorf("after Detach, sysfs: %s is still backed by %q", d.Path(), got)
	}
	if _, ok, err := loopdev.Find(f, owner, loopdev.ReadWrite); ok || err != nil {
		t.Errorf("after Detach, Find = %v, %v; want not found", ok, err)
	}
	if err := d.Detach(); err != nil {
		t.Errorf("second Detach: %v; want success, it is detached", err)
	}
}

// TestWritesLandInTheFile: what is written through the device is the
// backing file's content, at the same offset.
func TestWritesLandInTheFile(t *testing.T) {
	requireLoop(t)
	f := backingFile(t, 1<<20)
	d := attach(t, f)
	dev, err := os.OpenFile(d.Path(), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	want := bytes.Repeat([]byte("zonepath"), 512)
	if _, err := dev.WriteAt(want, 8192); err != nil {
		t.Fatal(err)
	}
	if err := dev.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 8192); err != nil || !bytes.Equal(got, want) {
		t.Errorf("backing file at 8192 after a write through %s: %q..., %v", d.Path(), got[:16], err)
	}
}

// TestResize: the device keeps its size when the file grows, until
// Resize (LOOP_SET_CAPACITY).
func TestResize(t *testing.T) {
	requireLoop(t)
	f := backingFile(t, 1<<20)
	d := attach(t, f)
	if err := f.Truncate(4 << 20); err != nil {
		t.Fatal(err)
	}
	if size, _ := d.Size(); size != 1<<20 {
		t.Fatalf("device size %d before Resize, want the old %d (else this test proves nothing)", size, 1<<20)
	}
	if err := d.Resize(); err != nil {
		t.Fatal(err)
	}
	if size, err := d.Size(); err != nil || size != 4<<20 {
		t.Errorf("device size after Resize %d, %v; want %d", size, err, 4<<20)
	}
}

// TestFindMatchesTheInodeNotThePath: the device follows its file through
// a rename, and a new file at the old name is not the one attached.
func TestFindMatchesTheInodeNotThePath(t *testing.T) {
	requireLoop(t)
	f := backingFile(t, 1<<20)
	d := attach(t, f)
	moved := f.Name() + ".moved"
	if err := os.Rename(f.Name(), moved); err != nil {
		t.Fatal(err)
	}
	impostor, err := os.OpenFile(f.Name(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	if found, ok, err := loopdev.Find(impostor, owner, loopdev.ReadWrite); ok || err != nil {
		t.Errorf("Find of a new file at the attached file's old path = %v, %v, %v; want none", found, ok, err)
	}
	reopened, err := os.Open(moved)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if found, ok, err := loopdev.Find(reopened, owner, loopdev.ReadWrite); !ok || err != nil || found != d {
		t.Errorf("Find of the renamed file = %v, %v, %v; want %v", found, ok, err, d)
	}
}

// TestProbeLeavesNothingAttached: the probe the driver runs at start
// detaches what it attached and removes its file.
func TestProbeLeavesNothingAttached(t *testing.T) {
	requireLoop(t)
	dir := t.TempDir()
	before := attachedCount(t)
	if err := loopdev.Probe(dir); err != nil {
		t.Fatal(err)
	}
	if after := attachedCount(t); after != before {
		t.Errorf("attached loop devices: %d before the probe, %d after", before, after)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the probe left %d files in its directory", len(entries))
	}
}

func attachedCount(t *testing.T) int {
	t.Helper()
	matches, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		t.Fatal(err)
	}
	return len(matches)
}

// TestReadOnlyDeviceRefusesWrites: a ReadOnly device refuses writes
// through its node and through a new node with its major:minor (what a
// container runtime makes), while a ReadWrite device of the same file,
// reached the same way, writes; Find tells the two apart. A writable
// backing file is refused for a read-only device.
func TestReadOnlyDeviceRefusesWrites(t *testing.T) {
	requireLoop(t)
	f := backingFile(t, 1<<20)
	if _, err := loopdev.Attach(f, owner, loopdev.ReadOnly); err == nil {
		t.Fatal("Attach read-only of a file open for writing succeeded; want it refused")
	}
	rw := attach(t, f)
	ro := attachAs(t, readOnly(t, f), loopdev.ReadOnly)
	if ro == rw {
		t.Fatalf("one device %v for both accesses", ro)
	}
	for _, c := range []struct {
		access loopdev.Access
		want   loopdev.Device
	}{{loopdev.ReadWrite, rw}, {loopdev.ReadOnly, ro}} {
		if found, ok, err := loopdev.Find(f, owner, c.access); !ok || err != nil || found != c.want {
			t.Errorf("Find %s = %v, %v, %v; want %v", c.access, found, ok, err, c.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join("/sys/block", "loop"+strconv.Itoa(ro.Number), "ro")); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Errorf("sysfs ro of %v: %q, %v; want 1", ro, b, err)
	}
	for _, path := range []string{ro.Path(), nodeOf(t, ro)} {
		if err := drivertest.WriteThrough(path, []byte("refused")); !drivertest.RefusedWrite(err) {
			t.Errorf("a write through %s (read-only %v): %v; want EROFS, EPERM or EACCES", path, ro, err)
		}
	}
	if err := drivertest.WriteThrough(nodeOf(t, rw), []byte("written")); err != nil {
		t.Fatalf("a write through a new node of the read-write device: %v", err)
	}
	got := make([]byte, 7)
	if _, err := f.ReadAt(got, 0); err != nil || string(got) != "written" {
		t.Errorf("backing file begins %q, %v; want what the read-write device wrote", got, err)
	}
}

// attachAs attaches f with access and detaches it when the test ends.
func attachAs(t *testing.T, f *os.File, access loopdev.Access) loopdev.Device {
	t.Helper()
	d, err := loopdev.Attach(f, owner, access)
	if err != nil {
		t.Fatalf("Attach %s: %v", access, err)
	}
	t.Cleanup(func() {
		if err := d.Detach(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return d
}

// readOnly opens f's file again, read-only, until the test ends.
func readOnly(t *testing.T, f *os.File) *os.File {
	t.Helper()
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return ro
}

// nodeOf makes a new node for d in a directory of the test's, as a
// container runtime does from the major:minor it is given.
func nodeOf(t *testing.T, d loopdev.Device) string {
	t.Helper()
	node := filepath.Join(t.TempDir(), "dev")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(d.Devno)); err != nil {
		t.Fatalf("mknod %s: %v", node, err)
	}
	return node
}
