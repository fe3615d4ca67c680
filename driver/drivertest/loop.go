package drivertest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
