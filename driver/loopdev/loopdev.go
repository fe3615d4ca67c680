package loopdev

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// loopMajor is the block major number of loop devices (LOOP_MAJOR in the
// kernel's include/uapi/linux/major.h).
const loopMajor = 7

// attachTries bounds the retries of the race between LOOP_CTL_GET_FREE
// and the attach: another process may take the free device in between,
// and the attach then fails with EBUSY.
const attachTries = 8

// Where the kernel's loop devices are seen; variables so that tests of
// the pure parts can point them elsewhere.
var (
	devDir   = "/dev"
	sysBlock = "/sys/block"
	// tryConfigure is false in a test that takes the path of kernels
	// before 5.8, which answer LOOP_CONFIGURE as unknown.
	tryConfigure = true
	// betweenGetFreeAndAttach, when set, runs where another process may
	// take the free device: a test takes it.
	betweenGetFreeAndAttach func(Device)
)

// Device is one loop device, /dev/loop<Number>.
type Device struct {
	Number int
	// Devno is the device number (major:minor) of the block device.
	Devno uint64
}

// Path is the device node.
func (d Device) Path() string { return filepath.Join(devDir, "loop"+strconv.Itoa(d.Number)) }

func (d Device) String() string { return d.Path() }

// Available reports why loop devices cannot be used here, or nil: the
// control device must open (root, or CAP_SYS_ADMIN, and a /dev that has it).
func Available() error {
	ctl, err := os.OpenFile(filepath.Join(devDir, "loop-control"), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	return ctl.Close()
}

// Access is how a device lets its users at the backing file.
type Access bool

const (
	ReadWrite Access = false
	// ReadOnly is a device the kernel marks read-only (LO_FLAGS_READ_ONLY,
	// which sets the disk read-only): every write through any node with
	// its major:minor fails (EPERM). A read-only mount of the node would
	// not do: the kernel does not apply a mount's read-only flag to the
	// device behind a device node, and a container runtime makes its own
	// node from the major:minor anyway. BLKROSET is not used: it marks one
	// block_device, which its holder can clear again with BLKROSET; the
	// disk's read-only flag it cannot.
	ReadOnly Access = true
)

func (a Access) String() string {
	if a == ReadOnly {
		return "read-only"
	}
	return "read-write"
}

// Attach attaches the open regular file backing to a free loop device
// for owner (see Find), with access, and returns it. For ReadOnly backing
// must be open read-only: kernels before 5.8 (LOOP_SET_FD) make a device
// read-only only for such a file, and with it not even the loop driver
// can write the file. The kernel's answer is checked, not assumed.
func Attach(backing *os.File, owner string, access Access) (Device, error) {
	if len(owner) >= unix.LO_NAME_SIZE {
		return Device{}, fmt.Errorf("owner %q: longer than %d bytes", owner, unix.LO_NAME_SIZE-1)
	}
	if err := checkOpenFor(backing, access); err != nil {
		return Device{}, err
	}
	d, err := attachFree(backing, owner, access)
	if err != nil {
		return d, err
	}
	if err := d.checkAccess(access); err != nil {
		return Device{}, errors.Join(err, d.Detach())
	}
	return d, nil
}

// checkOpenFor refuses a writable backing file for a ReadOnly device.
func checkOpenFor(backing *os.File, access Access) error {
	if access != ReadOnly {
		return nil
	}
	flags, err := unix.FcntlInt(backing.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if flags&unix.O_ACCMODE != unix.O_RDONLY {
		return fmt.Errorf("%s: open for writing; a read-only device needs it open read-only", backing.Name())
	}
	return nil
}

// checkAccess confirms the kernel gave the device the access asked for.
func (d Device) checkAccess(access Access) error {
	info, err := d.status()
	if err != nil {
		return err
	}
	if got := accessOf(info); got != access {
		return fmt.Errorf("%s: attached %s, want %s", d.Path(), got, access)
	}
	return nil
}

func accessOf(info *unix.LoopInfo64) Access {
	return Access(info.Flags&unix.LO_FLAGS_READ_ONLY != 0)
}

// attachFree attaches backing to a free device, asking again when another
// process takes the free one first.
func attachFree(backing *os.File, owner string, access Access) (Device, error) {
	ctl, err := os.OpenFile(filepath.Join(devDir, "loop-control"), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return Device{}, err
	}
	defer ctl.Close()
	for try := 1; ; try++ {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return Device{}, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		d, err := device(n)
		if err == nil && betweenGetFreeAndAttach != nil {
			betweenGetFreeAndAttach(d)
		}
		if err == nil {
			err = d.configure(backing, statusFor(owner, access))
		}
		if errors.Is(err, unix.EBUSY) && try < attachTries {
			continue // taken since GET_FREE: ask for another
		}
		return d, err
	}
}

// device describes loop device n and makes sure its node exists.
func device(n int) (Device, error) {
	d := Device{Number: n, Devno: unix.Mkdev(loopMajor, uint32(n))}
	// The minor is n only without partitions (max_part=0); sysfs knows.
	if b, err := os.ReadFile(filepath.Join(sysBlock, "loop"+strconv.Itoa(n), "dev")); err == nil {
		devno, err := parseDevno(string(b))
		if err != nil {
			return d, err
		}
		d.Devno = devno
	}
	return d, d.ensureNode()
}

// ensureNode creates the device node when it is missing. A container's
// /dev is often a copy made when it started (docker's privileged
// containers, hence kind's node containers and the pods in them): it
// holds the loop nodes that existed then, not those the kernel adds since
// on LOOP_CTL_GET_FREE. The kernel has the device; only the node is
// missing, and mknod makes it.
func (d Device) ensureNode() error {
	var st unix.Stat_t
	err := unix.Stat(d.Path(), &st)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == d.Devno:
		return nil
	case err == nil:
		return fmt.Errorf("%s exists but is not the block device %d:%d", d.Path(), unix.Major(d.Devno), unix.Minor(d.Devno))
	case !errors.Is(err, unix.ENOENT):
		return err
	}
	err = unix.Mknod(d.Path(), unix.S_IFBLK|0o660, int(d.Devno))
	if errors.Is(err, unix.EEXIST) {
		return nil // made by another process meanwhile
	}
	if err != nil {
		return fmt.Errorf("creating the missing device node %s: %w", d.Path(), err)
	}
	return nil
}

// configure attaches backing with LOOP_CONFIGURE, one ioctl, or where the
// kernel lacks it (before 5.8) with LOOP_SET_FD and LOOP_SET_STATUS64.
func (d Device) configure(backing *os.File, info unix.LoopInfo64) error {
	f, err := os.OpenFile(d.Path(), os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fd := int(f.Fd())
	if tryConfigure {
		err := unix.IoctlLoopConfigure(fd, &unix.LoopConfig{Fd: uint32(backing.Fd()), Info: info})
		if !unsupported(err) {
			return wrap("LOOP_CONFIGURE", d, err)
		}
	}
	if err := unix.IoctlSetInt(fd, unix.LOOP_SET_FD, int(backing.Fd())); err != nil {
		return wrap("LOOP_SET_FD", d, err)
	}
	if err := unix.IoctlLoopSetStatus64(fd, &info); err != nil {
		_ = unix.IoctlSetInt(fd, unix.LOOP_CLR_FD, 0)
		return wrap("LOOP_SET_STATUS64", d, err)
	}
	return nil
}

// statusFor is the status a device gets: no autoclear, read-only for
// ReadOnly (LOOP_CONFIGURE honours the flag; LOOP_SET_STATUS64 ignores it,
// and there the read-only backing file makes the device read-only), and
// the owner in lo_file_name. The kernel keeps that name and reports it,
// and interprets it never: the backing file is what sysfs
// (loop/backing_file) and losetup show, from the file itself. Recent
// kernels no longer keep lo_crypt_name.
func statusFor(owner string, access Access) unix.LoopInfo64 {
	var info unix.LoopInfo64
	copy(info.File_name[:len(info.File_name)-1], owner)
	if access == ReadOnly {
		info.Flags = unix.LO_FLAGS_READ_ONLY
	}
	return info
}

// unsupported tells an ioctl the kernel does not know: loop answers
// EINVAL for an unknown command, other layers ENOTTY.
func unsupported(err error) bool {
	return errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY)
}

func wrap(op string, d Device, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s on %s: %w", op, d.Path(), err)
}

// Find returns owner's loop device with access backed by the open file
// backing, matched by device and inode; ok is false when none is. The
// owner keeps users of one kernel apart: node plugins of several nodes on
// one host (kind's node containers share the host's kernel and, there,
// one data directory) each attach and detach their own device for a
// shared file, never another's. The access keeps a file's read-write and
// read-only devices apart; the kernel reports it (LO_FLAGS_READ_ONLY), so
// a restarted process finds each as it was.
func Find(backing *os.File, owner string, access Access) (d Device, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(backing.Fd()), &st); err != nil {
		return Device{}, false, err
	}
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return Device{}, false, err
	}
	for _, e := range entries {
		n, isLoop := loopNumber(e.Name())
		if !isLoop || !attached(n) {
			continue
		}
		d, err := device(n)
		if err != nil {
			return Device{}, false, err
		}
		info, err := d.status()
		if err != nil {
			continue // detached since, or gone
		}
		if backs(info, &st, owner) && accessOf(info) == access {
			return d, true, nil
		}
	}
	return Device{}, false, nil
}

// attached: sysfs shows a loop/ directory only for an attached device.
func attached(n int) bool {
	_, err := os.Stat(filepath.Join(sysBlock, "loop"+strconv.Itoa(n), "loop"))
	return err == nil
}

func (d Device) status() (*unix.LoopInfo64, error) {
	f, err := os.OpenFile(d.Path(), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.IoctlLoopGetStatus64(int(f.Fd()))
}

// backs reports whether a device's status names the file st describes,
// for owner. The kernel encodes lo_device as stat(2) encodes st_dev.
func backs(info *unix.LoopInfo64, st *unix.Stat_t, owner string) bool {
	return info.Device == uint64(st.Dev) && info.Inode == st.Ino &&
		string(bytes.TrimRight(info.File_name[:], "\x00")) == owner
}

// loopNumber parses a /sys/block entry name: "loop12" is 12.
func loopNumber(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "loop")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil
}

// parseDevno parses sysfs's "major:minor\n".
func parseDevno(s string) (uint64, error) {
	major, minor, ok := strings.Cut(strings.TrimSpace(s), ":")
	ma, err1 := strconv.ParseUint(major, 10, 32)
	mi, err2 := strconv.ParseUint(minor, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("device number %q: want major:minor", s)
	}
	return unix.Mkdev(uint32(ma), uint32(mi)), nil
}

// Detach detaches the device. One that is not attached (ENXIO), or whose
// node is gone with it, is detached already. If something still holds
// the device open, the kernel detaches it when that closes.
func (d Device) Detach() error {
	f, err := os.OpenFile(d.Path(), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	err = unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0)
	if errors.Is(err, unix.ENXIO) {
		return nil
	}
	return wrap("LOOP_CLR_FD", d, err)
}

// Resize makes the device take its backing file's current size
// (LOOP_SET_CAPACITY), after the file grew.
func (d Device) Resize() error {
	f, err := os.OpenFile(d.Path(), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return wrap("LOOP_SET_CAPACITY", d, unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0))
}

// Size is the device's size in bytes: the end of a block device is its
// size.
func (d Device) Size() (int64, error) {
	f, err := os.OpenFile(d.Path(), os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Seek(0, io.SeekEnd)
}

// Probe attaches a small file made in dir to a loop device and detaches
// it: nil when this process can use loop devices here.
func Probe(dir string) error {
	if err := Available(); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".loop-probe-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := f.Truncate(1 << 16); err != nil {
		return err
	}
	d, err := Attach(f, "zonepath-probe", ReadWrite)
	if err != nil {
		return err
	}
	return d.Detach()
}
