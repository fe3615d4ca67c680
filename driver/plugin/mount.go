package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
	mountutils "k8s.io/mount-utils"

	"github.com/zonepath/zonepath/driver/state"
)

// mounter performs node-side bind mounts, or only records them where the
// driver may not mount (an unprivileged laptop run); either way the node
// service keeps the same state, so the CSI behaviour is identical.
type mounter interface {
	// bind bind-mounts source at target with opts, mount(8) options
	// beside bind (bindOptions).
	bind(source, target string, opts []string) error
	unmount(target string) error
	kind() string
}

type bindMounter struct{ m mountutils.Interface }

func (b bindMounter) bind(source, target string, extra []string) error {
	if len(extra) > 0 {
		err := bindWithAttributes(source, target, extra)
		if !errors.Is(err, unix.ENOSYS) {
			return err
		}
		// A kernel before 5.12 lacks mount_setattr: the flags then bind
		// this mount namespace only (below).
	}
	// mount-utils mounts a bind mount, then remounts it with every option
	// (MS_REMOUNT|MS_BIND), which is how per-mount flags reach it here; a
	// remount changes only this namespace's copy of the mount.
	opts := append([]string{"bind"}, extra...)
	var err error
	first := false
	firstMount.Do(func() { first, err = true, b.m.Mount(source, target, "", opts) })
	if first {
		return err
	}
	return b.m.Mount(source, target, "", opts)
}

// bindWithAttributes bind-mounts source at target with the per-mount
// flags opts name (ro and mountFlags' list), set on a detached copy of
// the source before it is attached at target. That order matters where
// the CO sees the mount: a node plugin in a container with Bidirectional
// propagation (every Kubernetes deployment) makes a mount that propagates
// to kubelet's namespace as the copy it was when attached, while a later
// MS_REMOUNT changes only the plugin's own copy. On kind, a publish with
// nodev,noexec bound and then remounted showed them in the plugin's
// /proc/self/mountinfo and "rw,relatime" in the node's: a reader-only
// volume published so would be writable by the pod.
func bindWithAttributes(source, target string, opts []string) error {
	attr, err := mountAttributes(opts)
	if err != nil {
		return err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, source, unix.OPEN_TREE_CLONE|unix.O_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", source, err)
	}
	defer unix.Close(fd)
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("mount_setattr %v: %w", opts, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount to %s: %w", target, err)
	}
	return nil
}

// mountAttributes translates bind options into mount_setattr(2)'s
// attributes; an atime mode clears the others (MOUNT_ATTR__ATIME), as
// the kernel requires.
func mountAttributes(opts []string) (*unix.MountAttr, error) {
	attr := &unix.MountAttr{}
	for _, o := range opts {
		bit, ok := mountAttrBits[o]
		if !ok {
			return nil, fmt.Errorf("mount option %q has no mount attribute", o)
		}
		if o == "noatime" || o == "relatime" || o == "strictatime" {
			attr.Attr_clr |= unix.MOUNT_ATTR__ATIME
		}
		attr.Attr_set |= bit
	}
	return attr, nil
}

var mountAttrBits = map[string]uint64{
	"ro":          unix.MOUNT_ATTR_RDONLY,
	"nodev":       unix.MOUNT_ATTR_NODEV,
	"noexec":      unix.MOUNT_ATTR_NOEXEC,
	"nosuid":      unix.MOUNT_ATTR_NOSUID,
	"noatime":     unix.MOUNT_ATTR_NOATIME,
	"relatime":    unix.MOUNT_ATTR_RELATIME,
	"strictatime": unix.MOUNT_ATTR_STRICTATIME,
	"nodiratime":  unix.MOUNT_ATTR_NODIRATIME,
}

// firstMount runs the process mounter's first Mount alone: mount-utils'
// Mounter learns whether systemd runs on its first Mount and caches that
// in a field without a lock (Mounter.hasSystemd), so concurrent first
// mounts (node plugins staging at once, the race detector saw it) race on
// it; every later Mount only reads it.
var firstMount sync.Once

// unmount undoes one bind mount; removing the mount point is the
// caller's decision, since it may not be the driver's to remove.
func (b bindMounter) unmount(target string) error { return b.m.Unmount(target) }

func (bindMounter) kind() string { return "bind" }

// pathMounter mounts nothing: the node service only makes the paths.
type pathMounter struct{}

func (pathMounter) bind(string, string, []string) error { return nil }
func (pathMounter) unmount(string) error                { return nil }
func (pathMounter) kind() string                        { return "none" }

// bindOptions are the options of m's bind mount: ro for a read-only one,
// and the mount_flags of a publish (a stage records them only, see
// NodeStageVolume).
func bindOptions(m *state.Mount) []string {
	var opts []string
	if m.Readonly {
		opts = append(opts, "ro")
	}
	if !m.Staging {
		opts = append(opts, m.Flags...)
	}
	return opts
}

// newMounter picks the mounter: "bind", "none", or "auto", which tries a
// bind mount inside dir and falls back to none.
func newMounter(mode, dir string) (mounter, error) {
	switch mode {
	case "bind":
		return bindMounter{m: processMounter()}, nil
	case "none":
		return pathMounter{}, nil
	case "", "auto":
		if canBindMount(dir) {
			return bindMounter{m: processMounter()}, nil
		}
		return pathMounter{}, nil
	}
	return nil, fmt.Errorf("mount mode %q: must be auto, bind or none", mode)
}

// processMounter is the process's one mount-utils mounter: making one runs
// umount to learn how it behaves, which a host of thousands of node
// plugins (fakezones) would otherwise run thousands of times.
var processMounter = sync.OnceValue(func() mountutils.Interface { return mountutils.New("") })

func canBindMount(dir string) bool {
	probe, err := os.MkdirTemp(dir, ".mount-probe-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(probe)
	src, dst := filepath.Join(probe, "src"), filepath.Join(probe, "dst")
	if os.Mkdir(src, 0o700) != nil || os.Mkdir(dst, 0o700) != nil {
		return false
	}
	m := mountutils.New("")
	if m.Mount(src, dst, "", []string{"bind"}) != nil {
		return false
	}
	return m.Unmount(dst) == nil
}
