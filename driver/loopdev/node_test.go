package loopdev

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAttachMakesAMissingNode plays a container whose /dev was copied
// before the kernel added the device: only loop-control is there, and
// Attach must create the node of the device it is given.
func TestAttachMakesAMissingNode(t *testing.T) {
	requireLoop(t)
	dev := copiedDev(t)
	f, d := attachTemp(t)
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dev, "loop"+strconv.Itoa(d.Number)), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != d.Devno {
		t.Errorf("node of %v in %s: %+v, %v; want a block device %d:%d", d, dev, st, err, unix.Major(d.Devno), unix.Minor(d.Devno))
	}
	if found, ok, err := Find(f, "test", ReadWrite); !ok || err != nil || found != d {
		t.Errorf("Find = %v, %v, %v; want %v", found, ok, err, d)
	}
}

// TestAttachWithoutLoopConfigure takes the way of kernels before 5.8:
// LOOP_SET_FD, then LOOP_SET_STATUS64.
func TestAttachWithoutLoopConfigure(t *testing.T) {
	requireLoop(t)
	defer func() { tryConfigure = true }()
	tryConfigure = false
	_, d := attachTemp(t)
	info, err := d.status()
	if err != nil || string(bytes.TrimRight(info.File_name[:], "\x00")) != "test" || info.Flags&unix.LO_FLAGS_AUTOCLEAR != 0 {
		t.Errorf("status after LOOP_SET_STATUS64: %+v, %v; want the owner's name and no autoclear", info, err)
	}
	if size, err := d.Size(); err != nil || size != 1<<20 {
		t.Errorf("size %d, %v; want %d", size, err, 1<<20)
	}
}

// TestAttachReadOnlyWithoutLoopConfigure: on the way of kernels before
// 5.8, where LOOP_SET_STATUS64 ignores LO_FLAGS_READ_ONLY, the read-only
// backing file makes the device read-only, and Find tells it apart.
func TestAttachReadOnlyWithoutLoopConfigure(t *testing.T) {
	requireLoop(t)
	defer func() { tryConfigure = true }()
	tryConfigure = false
	f := tempFile(t)
	ro, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	d, err := Attach(ro, "test", ReadOnly)
	if err != nil {
		t.Fatalf("Attach read-only: %v", err)
	}
	defer d.Detach()
	if err := d.checkAccess(ReadOnly); err != nil {
		t.Error(err)
	}
	if found, ok, err := Find(f, "test", ReadOnly); !ok || err != nil || found != d {
		t.Errorf("Find read-only = %v, %v, %v; want %v", found, ok, err, d)
	}
	if _, ok, err := Find(f, "test", ReadWrite); ok || err != nil {
		t.Errorf("Find read-write = %v, %v; want none: the only device is read-only", ok, err)
	}
}

// TestAttachRetriesATakenDevice: when another process attaches the device
// LOOP_CTL_GET_FREE named before this one can (EBUSY), Attach asks for
// another free device.
func TestAttachRetriesATakenDevice(t *testing.T) {
	requireLoop(t)
	intruder := tempFile(t)
	var taken []Device
	betweenGetFreeAndAttach = func(d Device) {
		if len(taken) > 0 {
			return
		}
		if err := d.configure(intruder, statusFor("intruder", ReadWrite)); err != nil {
			t.Errorf("taking %v first: %v", d, err)
		}
		taken = append(taken, d)
		t.Cleanup(func() { d.Detach() })
	}
	defer func() { betweenGetFreeAndAttach = nil }()
	f, d := attachTemp(t)
	if len(taken) != 1 || d == taken[0] {
		t.Fatalf("Attach gave %v with %v taken first; want another device", d, taken)
	}
	if found, ok, err := Find(f, "test", ReadWrite); !ok || err != nil || found != d {
		t.Errorf("Find = %v, %v, %v; want %v", found, ok, err, d)
	}
}

// attachTemp attaches a new 1 MiB file for owner "test", detached when
// the test ends.
func attachTemp(t *testing.T) (*os.File, Device) {
	t.Helper()
	f := tempFile(t)
	d, err := Attach(f, "test", ReadWrite)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Detach(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return f, d
}

// tempFile makes a 1 MiB file, open read-write until the test ends.
func tempFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "vol")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestKeepSpare: after KeepSpare(n) at least n devices are free, each
// with its node, in a /dev that had none but loop-control. The devices it
// added are removed again when the test ends.
func TestKeepSpare(t *testing.T) {
	requireLoop(t)
	before := loopNumbers(t)
	t.Cleanup(func() { removeAdded(t, before) })
	const want = 3
	var held []Device
	for free := freeNumbers(t); len(free) > 0; free = freeNumbers(t) {
		_, d := attachTemp(t) // take every free device: KeepSpare must add
		held = append(held, d)
	}
	dev := copiedDev(t)
	if err := KeepSpare(want); err != nil {
		t.Fatal(err)
	}
	free := freeNumbers(t)
	if len(free) < want {
		t.Fatalf("%d free loop devices after KeepSpare(%d) with %d held", len(free), want, len(held))
	}
	for _, n := range free {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(dev, "loop"+strconv.Itoa(n)), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
			t.Errorf("free device %d has no node in %s: %v", n, dev, err)
		}
	}
}

// copiedDev points devDir, until the test ends, at a directory holding
// only loop-control: a container's /dev copied before any loop device.
func copiedDev(t *testing.T) string {
	t.Helper()
	var ctl unix.Stat_t
	if err := unix.Stat("/dev/loop-control", &ctl); err != nil {
		t.Fatal(err)
	}
	dev := t.TempDir()
	if err := unix.Mknod(filepath.Join(dev, "loop-control"), unix.S_IFCHR|0o600, int(ctl.Rdev)); err != nil {
		t.Skipf("cannot make a device node in a test directory: %v", err)
	}
	old := devDir
	devDir = dev
	t.Cleanup(func() { devDir = old })
	return dev
}

func loopNumbers(t *testing.T) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for _, e := range entries {
		if n, ok := loopNumber(e.Name()); ok {
			out[n] = true
		}
	}
	return out
}

func freeNumbers(t *testing.T) []int {
	var out []int
	for n := range loopNumbers(t) {
		if !attached(n) {
			out = append(out, n)
		}
	}
	return out
}

// removeAdded removes the loop devices that were not there before.
func removeAdded(t *testing.T, before map[int]bool) {
	ctl, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer ctl.Close()
	for n := range loopNumbers(t) {
		if !before[n] {
			if err := unix.IoctlSetInt(int(ctl.Fd()), unix.LOOP_CTL_REMOVE, n); err != nil {
				t.Errorf("removing loop device %d the test added: %v", n, err)
			}
		}
	}
}

// requireLoop skips a test where this process cannot attach a loop device.
func requireLoop(t *testing.T) {
	t.Helper()
	if err := Probe(t.TempDir()); err != nil {
		t.Skipf("needs loop devices (root and a working /dev/loop-control): %v", err)
	}
}
