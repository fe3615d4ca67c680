package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

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
	// mount-utils mounts a bind mount, then remounts it with every option
	// (MS_REMOUNT|MS_BIND), which is how per-mount flags reach it.
	opts := append([]string{"bind"}, extra...)
	var err error
	first := false
	firstMount.Do(func() { first, err = true, b.m.Mount(source, target, "", opts) })
	if first {
		return err
	}
	return b.m.Mount(source, target, "", opts)
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
