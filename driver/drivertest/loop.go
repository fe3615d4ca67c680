package drivertest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zonepath/zonepath/driver/loopdev"
)

// LoopDevicesUnder lists the loop devices (by number) whose backing file
// sysfs names under dir, or dir itself: the kernel's own account of what
// is attached, the one `losetup -a` prints, including files since deleted.
func LoopDevicesUnder(dir string) []int {
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var out []int
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue // detached meanwhile
		}
		name := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if name != dir && !strings.HasPrefix(name, dir+"/") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(m))), "loop"))
		if err == nil {
			out = append(out, n)
		}
	}
	return out
}

// RequireLoopDevices skips a test that needs real loop devices where this
// process cannot attach one (not root, or no usable /dev/loop-control).
func RequireLoopDevices(t testing.TB) {
	t.Helper()
	if err := loopdev.Probe(t.TempDir()); err != nil {
		t.Skipf("needs loop devices (root and a working /dev/loop-control), which CI has: %v", err)
	}
}

// detachLeftovers runs when a test ends, after the driver has stopped and
// the test's own cleanups ran: a loop device still backed by the data
// directory is a leak of the driver's (the test fails, unless it failed
// already) and is detached, so that no test leaves the host with one.
func detachLeftovers(t testing.TB, dataDir string) {
	t.Cleanup(func() {
		for _, n := range LoopDevicesUnder(dataDir) {
			if !t.Failed() {
				t.Errorf("drivertest: loop device %d is still attached to a file of %s when the test ends", n, dataDir)
			}
			if err := (loopdev.Device{Number: n}).Detach(); err != nil {
				t.Errorf("drivertest: detaching leftover loop device %d: %v", n, err)
			}
		}
	})
}

// WriteThrough opens path for writing and writes data at 0, flushed: the
// error of the open, the write or the flush, nil if the data was written.
// The read-only device tests write through device nodes with it.
func WriteThrough(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// RefusedWrite reports whether err is the kernel refusing a write to
// something read-only: EROFS (a read-only mount of a regular file), EPERM
// (a read-only block device) or EACCES.
func RefusedWrite(err error) bool {
	return errors.Is(err, unix.EROFS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)
}
