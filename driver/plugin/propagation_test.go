package plugin_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// sharedPeers mounts a tmpfs at <dir>/node, marks it shared, and binds it
// at <dir>/kubelet, a peer: what a node plugin in a container with
// Bidirectional propagation and kubelet on the host are to each other. A
// mount made below one shows below the other as a propagated copy.
func sharedPeers(t *testing.T) (plugin, kubelet string) {
	t.Helper()
	dir := t.TempDir()
	plugin, kubelet = filepath.Join(dir, "node"), filepath.Join(dir, "kubelet")
	for _, d := range []string{plugin, kubelet} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("zonepath-test", plugin, "tmpfs", 0, ""); err != nil {
		t.Skipf("mounting a tmpfs: %v (needs CAP_SYS_ADMIN)", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(plugin, unix.MNT_DETACH) })
	if err := unix.Mount("", plugin, "", unix.MS_SHARED, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(plugin, kubelet, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(kubelet, unix.MNT_DETACH) })
	return plugin, kubelet
}

// TestPublishFlagsPropagate: the per-mount flags of a publish (its
// mount_flags, and ro for a read-only one) are on the mount kubelet sees,
// not only on the node plugin's own copy. csi.proto NodePublishVolume:
// "readonly ... Indicates SP MUST publish the volume in readonly mode"; a
// copy that propagated before its flags were set would be writable by
// the pod. The publish is made below one peer and read below the other.
func TestPublishFlagsPropagate(t *testing.T) {
	cases := []struct {
		name     string
		readonly bool
		flags    []string
		want     []string
	}{
		{name: "mount_flags", flags: []string{"nodev", "noexec", "nosuid", "noatime"}, want: []string{"nodev", "noexec", "nosuid", "noatime"}},
		{name: "readonly", readonly: true, want: []string{"ro"}},
	}
	d := newTestDriver(t, nil)
	id, staging := d.stagedVolume(t, "propagation", false)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plugin, kubelet := sharedPeers(t)
			target := filepath.Join(plugin, "target")
			c := flagsCapability(tc.flags...)
			if _, err := d.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
				VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: c, Readonly: tc.readonly,
			}); err != nil {
				t.Fatalf("NodePublishVolume: %v", err)
			}
			t.Cleanup(func() { d.unpublish(t, id, target) })
			mine, theirs := mountOptionsAt(t, target), mountOptionsAt(t, filepath.Join(kubelet, "target"))
			for _, f := range tc.want {
				if !slices.Contains(mine, f) {
					t.Errorf("the plugin's mount has options %v, without %s", mine, f)
				}
				if !slices.Contains(theirs, f) {
					t.Errorf("the propagated mount kubelet sees has options %v, without %s (the plugin's has %v)", theirs, f, mine)
				}
			}
		})
	}
}
