package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/loopdev"
)

// blockDevices is how a block volume's file appears on the node: as the
// file itself, or as a loop device backed by it. CSI NodePublishVolume:
// "the SP SHALL place the block device at target_path"; a container
// runtime accepts only a device node there ("not a device node"), while a
// host without loop devices (thousands of fake node plugins on one
// machine, an unprivileged laptop) can only bind the file.
type blockDevices interface {
	// source is what to bind-mount for the volume whose file is at path,
	// attaching a loop device first if none backs it yet.
	source(path string) (string, error)
	// shows reports whether at (a mount point's stat) shows the file at
	// path.
	shows(at os.FileInfo, path string) bool
	// release detaches what source attached; nothing attached is fine.
	release(path string) error
	// resize makes the device show the file's size after it grew.
	resize(path string) error
	// size is the device's size; ok is false without a device.
	size(path string) (size int64, ok bool)
	kind() string
}

// Block device modes (Config.BlockDevices).
const (
	BlockDevicesAuto = "auto"
	BlockDevicesLoop = "loop"
	BlockDevicesFile = "file"
)

// newBlockDevices picks the mode: "loop", "file", or "auto" (and ""):
// loop when the mounter bind-mounts and a loop device can be attached and
// detached here, else file. Loop devices are useless without mounts: the
// device node is placed by a bind mount.
func newBlockDevices(mode string, m mounter, dataDir, nodeID string) (blockDevices, error) {
	switch mode {
	case BlockDevicesFile:
		return fileBlocks{}, nil
	case BlockDevicesLoop:
		if m.kind() != "bind" {
			return nil, fmt.Errorf("block devices %q need bind mounts, but mounts are %q", mode, m.kind())
		}
		return &loopBlocks{owner: loopOwner(nodeID)}, nil
	case "", BlockDevicesAuto:
		if m.kind() != "bind" {
			return fileBlocks{}, nil
		}
		if err := probeLoop(dataDir); err != nil {
			klog.InfoS("Block volumes are bind-mounted files: no loop devices here", "reason", err)
			return fileBlocks{}, nil
		}
		return &loopBlocks{owner: loopOwner(nodeID)}, nil
	}
	return nil, fmt.Errorf("block devices %q: must be auto, loop or file", mode)
}

// nodeBlockDevices is the mode of a node plugin; a controller alone
// places no volume, so it only checks the setting.
func nodeBlockDevices(cfg Config, m mounter) (blockDevices, error) {
	switch {
	case cfg.ServeNode:
		return newBlockDevices(cfg.BlockDevices, m, cfg.DataDir, cfg.NodeID)
	case slices.Contains([]string{"", BlockDevicesAuto, BlockDevicesLoop, BlockDevicesFile}, cfg.BlockDevices):
		return fileBlocks{}, nil
	}
	return nil, fmt.Errorf("block devices %q: must be auto, loop or file", cfg.BlockDevices)
}

// probeLoop probes once per process: the answer is the host's, and a
// process may run many plugins.
var probeLoop = func() func(dir string) error {
	var once sync.Once
	var err error
	return func(dir string) error {
		once.Do(func() { err = loopdev.Probe(dir) })
		return err
	}
}()

// fileBlocks bind-mounts the volume's file itself.
type fileBlocks struct{}

func (fileBlocks) source(path string) (string, error)  { return path, nil }
func (fileBlocks) shows(at os.FileInfo, p string) bool { return sameFileAs(at, p) }
func (fileBlocks) release(string) error                { return nil }
func (fileBlocks) resize(string) error                 { return nil }
func (fileBlocks) size(string) (int64, bool)           { return 0, false }
func (fileBlocks) kind() string                        { return BlockDevicesFile }

func sameFileAs(at os.FileInfo, path string) bool {
	st, err := os.Stat(path)
	return err == nil && os.SameFile(at, st)
}

// loopBlocks attaches each staged block volume's file to a loop device
// and places the device node. The kernel is the record: the device of a
// volume is the one its file backs (loopdev.Find), so a restarted plugin
// finds what it attached before, and a rebooted node, having none,
// attaches anew.
type loopBlocks struct {
	// owner marks this node's devices (loopdev.Find): on kind, the node
	// plugins of every node share the host's kernel and one data
	// directory, and each must attach, find and detach its own device.
	owner string
	// mu keeps two calls for one file from attaching two devices.
	mu sync.Mutex
}

// loopOwner is the owner of a node's devices: its ID, or a digest of an ID
// too long for the kernel's 63 bytes.
func loopOwner(nodeID string) string {
	const prefix = "zonepath/"
	if len(prefix)+len(nodeID) < unix.LO_NAME_SIZE {
		return prefix + nodeID
	}
	sum := sha256.Sum256([]byte(nodeID))
	return prefix + "sha256:" + hex.EncodeToString(sum[:])[:40]
}

// withDevice opens the volume's file (O_NOFOLLOW, a regular file only:
// the kernel attaches the inode opened here, never what a path resolves
// to later), finds the device it backs (ok false: none) and runs fn, one
// call at a time.
func (l *loopBlocks) withDevice(path string, fn func(f *os.File, d loopdev.Device, ok bool) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := openRegular(path, os.O_RDWR)
	if err != nil {
		return err
	}
	defer f.Close()
	d, ok, err := loopdev.Find(f, l.owner)
	if err != nil {
		return err
	}
	return fn(f, d, ok)
}

func (l *loopBlocks) source(path string) (dev string, err error) {
	err = l.withDevice(path, func(f *os.File, d loopdev.Device, ok bool) error {
		if !ok {
			if d, err = loopdev.Attach(f, l.owner); err != nil {
				return err
			}
			klog.V(2).InfoS("Attached loop device", "device", d, "file", path)
		}
		dev = d.Path()
		return nil
	})
	if err == nil {
		// Kubelet attaches a loop device of its own over each block volume
		// it maps into a pod, right after the publish: leave it free
		// devices whose nodes exist in this /dev.
		if serr := loopdev.KeepSpare(spareLoopDevices); serr != nil {
			klog.InfoS("Could not keep spare loop devices for kubelet", "err", serr)
		}
	}
	return dev, err
}

// spareLoopDevices is how many free loop devices, with nodes, a stage or
// publish leaves: one per block volume kubelet may map meanwhile.
const spareLoopDevices = 4

// shows: the file itself (bound before a switch to loop devices), or the
// device the file backs.
func (l *loopBlocks) shows(at os.FileInfo, path string) bool {
	if at.Mode().IsRegular() {
		return sameFileAs(at, path)
	}
	st, isDev := at.Sys().(*syscall.Stat_t)
	if at.Mode()&os.ModeDevice == 0 || !isDev {
		return false
	}
	shows := false
	_ = l.withDevice(path, func(_ *os.File, d loopdev.Device, ok bool) error {
		shows = ok && st.Rdev == d.Devno
		return nil
	})
	return shows
}

// release detaches the file's device. A file that is gone has none to
// find (its device, if any, is left: see the README).
func (l *loopBlocks) release(path string) error {
	err := l.withDevice(path, func(f *os.File, d loopdev.Device, ok bool) error {
		if !ok {
			return nil
		}
		if err := d.Detach(); err != nil {
			return err
		}
		klog.V(2).InfoS("Detached loop device", "device", d, "file", path)
		// What the device wrote is in the file's page cache: make it
		// durable, as detaching a disk would.
		return f.Sync()
	})
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

func (l *loopBlocks) resize(path string) error {
	return l.withDevice(path, func(_ *os.File, d loopdev.Device, ok bool) error {
		if !ok {
			return nil
		}
		return d.Resize()
	})
}

func (l *loopBlocks) size(path string) (size int64, ok bool) {
	err := l.withDevice(path, func(_ *os.File, d loopdev.Device, attached bool) (err error) {
		if ok = attached; ok {
			size, err = d.Size()
		}
		return err
	})
	return size, ok && err == nil
}

func (*loopBlocks) kind() string { return BlockDevicesLoop }
