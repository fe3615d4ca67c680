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
//
// source, shows and release take the access of the mount they are
// for (csi.proto NodePublishVolumeRequest.readonly: "the SP MUST publish
// the volume in readonly mode"): a read-only publish gets a device that
// refuses writes itself, not only a read-only mount of its node.
type blockDevices interface {
	// source is what to bind-mount for the volume whose file is at path,
	// attaching a loop device with access first if none backs it yet.
	source(path string, access loopdev.Access) (string, error)
	// shows reports whether at (a mount point's stat) shows the file at
	// path, through a device with access.
	shows(at os.FileInfo, path string, access loopdev.Access) bool
	// release detaches what source attached for access; nothing attached
	// is fine.
	release(path string, access loopdev.Access) error
	// resize makes the devices show the file's size after it grew.
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

// fileBlocks bind-mounts the volume's file itself. A read-only publish is
// a read-only bind mount, and for a regular file (unlike a device node)
// the kernel refuses every open for writing through a read-only mount
// (EROFS), so one file serves both accesses.
type fileBlocks struct{}

func (fileBlocks) source(path string, _ loopdev.Access) (string, error) { return path, nil }
func (fileBlocks) shows(at os.FileInfo, p string, _ loopdev.Access) bool {
	return sameFileAs(at, p)
}
func (fileBlocks) release(string, loopdev.Access) error { return nil }
func (fileBlocks) resize(string) error                  { return nil }
func (fileBlocks) size(string) (int64, bool)            { return 0, false }
func (fileBlocks) kind() string                         { return BlockDevicesFile }

func sameFileAs(at os.FileInfo, path string) bool {
	st, err := os.Stat(path)
	return err == nil && os.SameFile(at, st)
}

// loopBlocks attaches each staged block volume's file to a loop device
// and places the device node. The kernel is the record: the device of a
// volume is the one its file backs (loopdev.Find), so a restarted plugin
// finds what it attached before, and a rebooted node, having none,
// attaches anew.
//
// A volume has up to two devices on a node, one per access: the
// read-write device its stage and read-write publishes share, and the
// read-only device (LO_FLAGS_READ_ONLY, over the file opened read-only)
// its read-only publishes share. A read-only mount of the read-write
// device's node would not do: the kernel ignores a mount's read-only flag
// for a device node, and a container runtime makes its own node from the
// major:minor. The kernel reports each device's access, so Find tells
// the two apart after a restart too; each is detached when the last mount
// using it goes (Plugin.unmount).
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
// to later) for access, finds its device with access (ok false: none) and
// runs fn, one call at a time.
func (l *loopBlocks) withDevice(path string, access loopdev.Access, fn func(f *os.File, d loopdev.Device, ok bool) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	flag := os.O_RDWR
	if access == loopdev.ReadOnly {
		flag = os.O_RDONLY // what a read-only device must be attached over
	}
	f, err := openRegular(path, flag)
	if err != nil {
		return err
	}
	defer f.Close()
	d, ok, err := loopdev.Find(f, l.owner, access)
	if err != nil {
		return err
	}
	return fn(f, d, ok)
}

// eachDevice runs fn for the file's device of each access, where one is
// attached.
func (l *loopBlocks) eachDevice(path string, fn func(d loopdev.Device) error) error {
	for _, access := range []loopdev.Access{loopdev.ReadWrite, loopdev.ReadOnly} {
		err := l.withDevice(path, access, func(_ *os.File, d loopdev.Device, ok bool) error {
			if !ok {
				return nil
			}
			return fn(d)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *loopBlocks) source(path string, access loopdev.Access) (dev string, err error) {
	err = l.withDevice(path, access, func(f *os.File, d loopdev.Device, ok bool) error {
		if !ok {
			if d, err = loopdev.Attach(f, l.owner, access); err != nil {
				return err
			}
			klog.V(2).InfoS("Attached loop device", "device", d, "access", access, "file", path)
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
// device with access the file backs.
func (l *loopBlocks) shows(at os.FileInfo, path string, access loopdev.Access) bool {
	if at.Mode().IsRegular() {
		return sameFileAs(at, path)
	}
	st, isDev := at.Sys().(*syscall.Stat_t)
	if at.Mode()&os.ModeDevice == 0 || !isDev {
		return false
	}
	shows := false
	_ = l.withDevice(path, access, func(_ *os.File, d loopdev.Device, ok bool) error {
		shows = ok && st.Rdev == d.Devno
		return nil
	})
	return shows
}

// release detaches the file's device with access. A file that is gone
// has none to find (its device, if any, is left: see the README).
func (l *loopBlocks) release(path string, access loopdev.Access) error {
	err := l.withDevice(path, access, func(f *os.File, d loopdev.Device, ok bool) error {
		if !ok {
			return nil
		}
		if err := d.Detach(); err != nil {
			return err
		}
		klog.V(2).InfoS("Detached loop device", "device", d, "access", access, "file", path)
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
	return l.eachDevice(path, loopdev.Device.Resize)
}

// size is the size of the file's first device: each shows the same file,
// and each is resized together.
func (l *loopBlocks) size(path string) (size int64, ok bool) {
	err := l.eachDevice(path, func(d loopdev.Device) (err error) {
		if !ok {
			size, err = d.Size()
			ok = err == nil
		}
		return err
	})
	return size, ok && err == nil
}

func (*loopBlocks) kind() string { return BlockDevicesLoop }
