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
	if err := Probe(t.TempDir()); err != nil {
		t.Skipf("needs loop devices (root and a working /dev/loop-control): %v", err)
	}
	var ctl unix.Stat_t
	if err := unix.Stat("/dev/loop-control", &ctl); err != nil {
		t.Fatal(err)
	}
	dev := t.TempDir()
	if err := unix.Mknod(filepath.Join(dev, "loop-control"), unix.S_IFCHR|0o600, int(ctl.Rdev)); err != nil {
		t.Skipf("cannot make a device node in a test directory: %v", err)
	}
	defer func(old string) { devDir = old }(devDir)
	devDir = dev

	f, d := attachTemp(t)
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(dev, "loop"+strconv.Itoa(d.Number)), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != d.Devno {
		t.Errorf("node of %v in %s: %+v, %v; want a block device %d:%d", d, dev, st, err, unix.Major(d.Devno), unix.Minor(d.Devno))
	}
	if found, ok, err := Find(f, "test"); !ok || err != nil || found != d {
		t.Errorf("Find = %v, %v, %v; want %v", found, ok, err, d)
	}
}

// TestAttachWithoutLoopConfigure takes the way of kernels before 5.8:
// LOOP_SET_FD, then LOOP_SET_STATUS64.
func TestAttachWithoutLoopConfigure(t *testing.T) {
	if err := Probe(t.TempDir()); err != nil {
		t.Skipf("needs loop devices (root and a working /dev/loop-control): %v", err)
	}
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

// TestAttachRetriesATakenDevice: when another process attaches the device
// LOOP_CTL_GET_FREE named before this one can (EBUSY), Attach asks for
// another free device.
func TestAttachRetriesATakenDevice(t *testing.T) {
	if err := Probe(t.TempDir()); err != nil {
		t.Skipf("needs loop devices (root and a working /dev/loop-control): %v", err)
	}
	intruder := tempFile(t)
	var taken []Device
	betweenGetFreeAndAttach = func(d Device) {
		if len(taken) > 0 {
			return
		}
		if err := d.configure(intruder, "intruder"); err != nil {
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
	if found, ok, err := Find(f, "test"); !ok || err != nil || found != d {
		t.Errorf("Find = %v, %v, %v; want %v", found, ok, err, d)
	}
}

// attachTemp attaches a new 1 MiB file for owner "test", detached when
// the test ends.
func attachTemp(t *testing.T) (*os.File, Device) {
	t.Helper()
	f := tempFile(t)
	d, err := Attach(f, "test")
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
