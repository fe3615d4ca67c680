package loopdev

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// KeepSpare makes sure at least n loop devices are free and every loop
// device the kernel has owns a node in /dev.
//
// It is for the others who attach loop devices through the same /dev:
// kubelet attaches one over every raw block volume it maps into a pod
// (losetup, k8s.io/kubernetes pkg/volume/util/volumepathhandler). In a
// container whose /dev is a copy made at its start (kind's nodes),
// losetup fails on a device LOOP_CTL_GET_FREE added since, whose node is
// missing there; with spare devices that have nodes, GET_FREE names one
// of those.
func KeepSpare(n int) error {
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return err
	}
	have := map[int]bool{}
	free := 0
	for _, e := range entries {
		if i, ok := loopNumber(e.Name()); ok {
			have[i] = true
			if !attached(i) {
				free++
			}
		}
	}
	if free < n {
		if err := add(have, n-free); err != nil {
			return err
		}
	}
	for i := range have {
		if _, err := device(i); err != nil {
			return err
		}
	}
	return nil
}

// add asks the kernel for count new loop devices at the lowest numbers
// not in have, and adds them there.
func add(have map[int]bool, count int) error {
	ctl, err := os.OpenFile(filepath.Join(devDir, "loop-control"), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer ctl.Close()
	for i := 0; count > 0; i++ {
		if have[i] {
			continue
		}
		err := unix.IoctlSetInt(int(ctl.Fd()), unix.LOOP_CTL_ADD, i)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return wrap("LOOP_CTL_ADD", Device{Number: i}, err)
		}
		have[i] = true
		count--
	}
	return nil
}
