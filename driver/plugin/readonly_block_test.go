package plugin_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// The read-only block tests hold csi.proto NodePublishVolumeRequest.readonly:
// "Indicates SP MUST publish the volume in readonly mode." A read-only
// bind mount does not stop writes through a device node, and a container
// runtime never uses the published node anyway: it makes its own from
// the node's major:minor. So the device itself must refuse writes.

// publishReadOnly publishes a staged block volume read-only at a new path.
func (d *testDriver) publishReadOnly(t *testing.T, id, staging string) (target string) {
	t.Helper()
	target = filepath.Join(t.TempDir(), "ro-dev")
	d.publishReadOnlyAt(t, id, staging, target)
	return target
}

func (d *testDriver) publishReadOnlyAt(t *testing.T, id, staging, target string) {
	t.Helper()
	_, err := d.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: id, StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: drivertest.Capability(true), Readonly: true,
	})
	if err != nil {
		t.Fatalf("read-only NodePublishVolume at %s: %v", target, err)
	}
}

func (d *testDriver) unpublish(t *testing.T, id, target string) {
	t.Helper()
	if _, err := d.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatalf("NodeUnpublishVolume of %s: %v", target, err)
	}
}

// assertRefusesWrites: opening path for writing, or writing through it,
// fails as the kernel refuses writes to something read-only.
func assertRefusesWrites(t *testing.T, what, path string) {
	t.Helper()
	err := drivertest.WriteThrough(path, []byte("a tenant writes the shared image"))
	if err == nil {
		t.Errorf("%s: a write through %s succeeded; a read-only publish must refuse it (csi.proto NodePublishVolumeRequest.readonly: \"SP MUST publish the volume in readonly mode\")", what, path)
	} else if !drivertest.RefusedWrite(err) {
		t.Errorf("%s: a write through %s failed with %v, want EROFS, EPERM or EACCES", what, path, err)
	}
}

// runtimeNode makes what a container runtime makes for a device it gives a
// container: a new node with the major:minor of the published one, in a
// directory of its own.
func runtimeNode(t *testing.T, published string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(published, &st); err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(t.TempDir(), "container-dev")
	if err := unix.Mknod(node, unix.S_IFBLK|0o660, int(st.Rdev)); err != nil {
		t.Fatalf("mknod %s as a runtime does: %v", node, err)
	}
	return node
}

// readFrom reads the first n bytes of path.
func readFrom(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	got := make([]byte, n)
	_, err = f.ReadAt(got, 0)
	return got, err
}

// assertHolds: the volume's file begins with want.
func (d *testDriver) assertHolds(t *testing.T, id string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(d.volumeFile(id))
	if err != nil || !bytes.HasPrefix(got, want) {
		t.Errorf("volume %s does not begin with %q (%v)", id, want, err)
	}
}

// TestLoopReadOnlyPublishRefusesWrites: a read-only publish places a
// device that refuses writes, through the published node and through a
// node a runtime makes from its major:minor; a read-write publish of the
// same volume on the same node still writes, and a runtime's node of
// that device too (which proves the mknod directory allows devices).
// Unpublishing each detaches only what it alone used.
func TestLoopReadOnlyPublishRefusesWrites(t *testing.T) {
	d := newLoopDriver(t)
	id, staging, rw := d.publishedVolume(t, "loop-read-only")
	golden := bytes.Repeat([]byte("golden image "), 64)
	writeAt(t, rw, golden)
	ro := d.publishReadOnly(t, id, staging)
	blockDeviceSize(t, ro)

	assertRefusesWrites(t, "the published read-only node", ro)
	assertRefusesWrites(t, "a runtime's node of the read-only device", runtimeNode(t, ro))
	if got, err := readFrom(ro, len(golden)); err != nil || !bytes.Equal(got, golden) {
		t.Errorf("the read-only device reads %q, %v; want the volume's data", got, err)
	}

	rewritten := bytes.Repeat([]byte("read-write still writes "), 32)
	if err := drivertest.WriteThrough(runtimeNode(t, rw), rewritten); err != nil {
		t.Fatalf("a write through a runtime's node of the read-write device: %v", err)
	}
	d.assertHolds(t, id, rewritten)

	d.unpublish(t, id, ro)
	if n := d.devicesOf(id); n != 1 {
		t.Errorf("after the read-only unpublish %d loop devices back the volume, want the read-write one", n)
	}
	writeAt(t, rw, golden)
	d.assertHolds(t, id, golden)
	d.unpublishAndUnstage(t, id, staging, rw)
}

// TestLoopReadOnlyPublishSurvivesRestart: with read-only and read-write
// publishes of one volume, a restarted node plugin (it keeps no record of
// devices: the kernel is the record) answers a repeated read-only publish
// OK with the device still read-only, and unpublish and unstage detach
// every device.
func TestLoopReadOnlyPublishSurvivesRestart(t *testing.T) {
	d := newLoopDriver(t)
	id, staging := d.stagedVolume(t, "loop-read-only-restart", true)
	ro := d.publishReadOnly(t, id, staging)
	rw := filepath.Join(t.TempDir(), "dev")
	if err := d.publish(id, staging, rw, true); err != nil {
		t.Fatal(err)
	}
	d.restart(t)
	d.publishReadOnlyAt(t, id, staging, ro) // repeated after a restart
	assertRefusesWrites(t, "after a restart, a runtime's node of the read-only device", runtimeNode(t, ro))
	writeAt(t, rw, []byte("still writable"))
	d.unpublish(t, id, ro)
	d.unpublishAndUnstage(t, id, staging, rw)
}

// TestFileReadOnlyPublishRefusesWrites: with block volumes as bound files
// (--block-devices=file), a read-only bind mount of a regular file
// refuses writes (the kernel checks the mount for a regular file, unlike
// for a device node), while a read-write publish writes.
func TestFileReadOnlyPublishRefusesWrites(t *testing.T) {
	d := newTestDriver(t, func(c *plugin.Config) { c.Mount, c.BlockDevices = "auto", plugin.BlockDevicesFile })
	if d.Plugin.MountKind() != "bind" {
		t.Skip("--mount auto found no bind mounts here (needs CAP_SYS_ADMIN)")
	}
	id, staging, rw := d.publishedVolume(t, "file-read-only")
	ro := d.publishReadOnly(t, id, staging)
	writeAt(t, rw, []byte("through the read-write publish"))
	assertRefusesWrites(t, "the read-only bound file", ro)
	d.assertHolds(t, id, []byte("through the read-write publish"))
	d.unpublish(t, id, ro)
	d.unpublish(t, id, rw)
}

// TestLoopReadOnlyPublishFromBeforeReadOnlyDevices: a read-only publish
// made by a driver without read-only devices bound the read-write device.
// Published again, it gets the read-only device bound over that one; its
// unpublish unmounts both and removes the target, and unstage detaches
// every device.
func TestLoopReadOnlyPublishFromBeforeReadOnlyDevices(t *testing.T) {
	d := newLoopDriver(t)
	id, staging := d.stagedVolume(t, "loop-read-only-upgrade", true)
	ro := d.publishReadOnly(t, id, staging)
	// What the old driver left: the read-write (staged) device at ro.
	if err := unix.Unmount(ro, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(filepath.Join(staging, id), ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := drivertest.WriteThrough(ro, []byte("the old driver let it write")); err != nil {
		t.Fatalf("the read-write device bound as the old driver did: %v", err)
	}
	d.publishReadOnlyAt(t, id, staging, ro)
	assertRefusesWrites(t, "a read-only publish repeated after an upgrade", runtimeNode(t, ro))
	d.unpublish(t, id, ro)
	assertAbsent(t, "NodeUnpublishVolume left its target", ro)
	if _, err := d.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
	if n := d.devicesOf(id); n != 0 {
		t.Errorf("after unpublish and unstage %d loop devices back the volume", n)
	}
}

// TestLoopControllerReadOnlyPublishRefusesWrites: a volume published to
// the node read-only by ControllerPublishVolume (Kubernetes: a PV with
// spec.csi.readOnly, which the external-attacher passes there and kubelet
// never passes to NodePublishVolume) is published read-only by every
// NodePublishVolume that carries that publish_context, whatever its own
// readonly says: csi.proto ControllerPublishVolumeRequest.readonly,
// "Indicates SP MUST publish the volume in readonly mode". The node
// learns it from the publish_context, which the CO passes on unchanged
// (csi.proto NodePublishVolumeRequest.publish_context).
func TestLoopControllerReadOnlyPublishRefusesWrites(t *testing.T) {
	d := newLoopDriver(t)
	ctx := context.Background()
	id := d.mustCreateVolume(sizedRequest("loop-controller-read-only", true, &csi.CapacityRange{RequiredBytes: 1 << 20})).GetVolumeId()
	pub, err := d.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: id, NodeId: drivertest.NodeID, VolumeCapability: drivertest.Capability(true), Readonly: true,
	})
	if err != nil {
		t.Fatalf("read-only ControllerPublishVolume: %v", err)
	}
	staging := filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging,
		VolumeCapability: drivertest.Capability(true), PublishContext: pub.GetPublishContext()}); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	target := filepath.Join(t.TempDir(), "dev")
	if _, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging, TargetPath: target,
		VolumeCapability: drivertest.Capability(true), PublishContext: pub.GetPublishContext()}); err != nil {
		t.Fatalf("NodePublishVolume without readonly of a volume published read-only: %v", err)
	}
	assertRefusesWrites(t, "a runtime's node of a volume ControllerPublishVolume published read-only", runtimeNode(t, target))
	d.unpublishAndUnstage(t, id, staging, target)
}

// TestPublishContextReadonly: ControllerPublishVolume answers the
// read-only mark only for a read-only publish, and NodePublishVolume
// takes "true" or nothing there; another value is no publish_context of
// this driver's: INVALID_ARGUMENT (General Error Table, "Invalid or
// unsupported field in the request").
func TestPublishContextReadonly(t *testing.T) {
	d := newTestDriver(t, nil)
	ctx := context.Background()
	for _, readonly := range []bool{false, true} {
		id := d.mustCreateVolume(sizedRequest(fmt.Sprintf("publish-context-%t", readonly), false, &csi.CapacityRange{RequiredBytes: 1 << 20})).GetVolumeId()
		resp, err := d.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: drivertest.NodeID, VolumeCapability: drivertest.Capability(false), Readonly: readonly})
		if got := resp.GetPublishContext()["zonepath.csi.dev/readonly"] == "true"; err != nil || got != readonly {
			t.Errorf("ControllerPublishVolume readonly=%t: publish_context %v, %v", readonly, resp.GetPublishContext(), err)
		}
	}
	id, staging := d.stagedVolume(t, "publish-context-bad", false)
	_, err := d.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
		TargetPath: filepath.Join(t.TempDir(), "target"), VolumeCapability: drivertest.Capability(false),
		PublishContext: map[string]string{"zonepath.csi.dev/readonly": "yes"}})
	if codeOf(err) != codes.InvalidArgument {
		t.Errorf("NodePublishVolume with zonepath.csi.dev/readonly=yes: %v, want INVALID_ARGUMENT", err)
	}
}
