package plugin_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/loopdev"
	"github.com/zonepath/zonepath/driver/plugin"
)

// newLoopDriver is a driver whose block volumes are loop devices; the test
// is skipped where there are none to be had.
func newLoopDriver(t *testing.T) *testDriver {
	t.Helper()
	drivertest.RequireLoopDevices(t)
	d := newTestDriver(t, func(c *plugin.Config) { c.Mount, c.BlockDevices = "bind", plugin.BlockDevicesLoop })
	if got := d.Plugin.BlockDevicesKind(); got != plugin.BlockDevicesLoop {
		t.Fatalf("BlockDevicesKind = %q, want loop", got)
	}
	return d
}

func (d *testDriver) volumeFile(id string) string {
	return filepath.Join(d.dataDir(), "volumes", id+".img")
}

// devicesOf is how many loop devices the kernel has backed by the volume.
func (d *testDriver) devicesOf(id string) int {
	return len(drivertest.LoopDevicesUnder(d.volumeFile(id)))
}

// blockDeviceSize checks path is a block device node and returns its size.
func blockDeviceSize(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
		t.Fatalf("%s: mode %#o, %v; want a block device node (CSI NodePublishVolume: \"the SP SHALL place the block device at target_path\")", path, st.Mode, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	return size
}

// publishedVolume creates a 1 MiB block volume, stages and publishes it.
func (d *testDriver) publishedVolume(t *testing.T, name string) (id, staging, target string) {
	t.Helper()
	id, staging = d.stagedVolume(t, name, true)
	target = filepath.Join(t.TempDir(), "dev")
	if err := d.publish(id, staging, target, true); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	return id, staging, target
}

// unpublishAndUnstage undoes publishedVolume and checks that no loop
// device backs the volume any more.
func (d *testDriver) unpublishAndUnstage(t *testing.T, id, staging, target string) {
	t.Helper()
	ctx := context.Background()
	if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatalf("NodeUnpublishVolume: %v", err)
	}
	if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Fatalf("NodeUnstageVolume: %v", err)
	}
	if n := d.devicesOf(id); n != 0 {
		t.Errorf("after NodeUnstageVolume %d loop devices still back the volume", n)
	}
	assertAbsent(t, "NodeUnpublishVolume left its target", target)
}

// TestLoopPublishPlacesTheDevice: the published path is a block device
// node the volume's size; what is written through it lands in the
// volume's file; NodeGetVolumeStats reports the device's size; unstage
// detaches the device (CSI NodeUnstageVolume: "undo the work by the
// corresponding NodeStageVolume").
func TestLoopPublishPlacesTheDevice(t *testing.T) {
	d := newLoopDriver(t)
	id, staging, target := d.publishedVolume(t, "loop-publish")
	if size := blockDeviceSize(t, target); size != 1<<20 {
		t.Errorf("published device is %d bytes, want the volume's %d", size, 1<<20)
	}
	if n := d.devicesOf(id); n != 1 {
		t.Fatalf("%d loop devices back the volume, want 1", n)
	}
	payload := bytes.Repeat([]byte("through the loop device "), 100)
	writeAt(t, target, payload)
	got, err := os.ReadFile(d.volumeFile(id))
	if err != nil || !bytes.HasPrefix(got, payload) {
		t.Errorf("volume file does not begin with what was written through %s (%v)", target, err)
	}
	stats, err := d.NodeGetVolumeStats(context.Background(), &csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: target})
	if err != nil || len(stats.GetUsage()) != 1 || stats.GetUsage()[0].GetTotal() != 1<<20 {
		t.Errorf("NodeGetVolumeStats = %v, %v; want a total of %d", stats, err, 1<<20)
	}
	d.unpublishAndUnstage(t, id, staging, target)
}

// TestLoopStageIsIdempotent: staging twice attaches one device; unstaging
// twice detaches it and then succeeds (CSI NodeUnstageVolume: "If the
// volume ... is not staged to the staging_target_path, the Plugin MUST
// reply 0 OK").
func TestLoopStageIsIdempotent(t *testing.T) {
	d := newLoopDriver(t)
	ctx := context.Background()
	id, staging := d.stagedVolume(t, "loop-twice", true)
	req := &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: drivertest.Capability(true)}
	if _, err := d.NodeStageVolume(ctx, req); err != nil {
		t.Fatalf("second NodeStageVolume: %v", err)
	}
	if n := d.devicesOf(id); n != 1 {
		t.Errorf("after two stages %d loop devices back the volume, want 1", n)
	}
	for i := range 2 {
		if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
			t.Fatalf("NodeUnstageVolume #%d: %v", i+1, err)
		}
		if n := d.devicesOf(id); n != 0 {
			t.Errorf("after NodeUnstageVolume #%d %d loop devices back the volume", i+1, n)
		}
	}
}

// TestLoopUnstageAfterRestart: a node plugin restarted on the same state
// and data finds the device by the volume's file and detaches it.
func TestLoopUnstageAfterRestart(t *testing.T) {
	d := newLoopDriver(t)
	id, staging, target := d.publishedVolume(t, "loop-restart")
	d.restart(t)
	if got := d.Plugin.BlockDevicesKind(); got != plugin.BlockDevicesLoop {
		t.Fatalf("restarted plugin's block devices: %q", got)
	}
	d.unpublishAndUnstage(t, id, staging, target)
}

// TestLoopRestageAfterReboot: a node that rebooted has lost its mounts and
// loop devices but kept the state; staging and publishing again attach a
// new device rather than trusting the record.
func TestLoopRestageAfterReboot(t *testing.T) {
	d := newLoopDriver(t)
	ctx := context.Background()
	id, staging := d.stagedVolume(t, "loop-reboot", true)
	d.Stop()
	point := filepath.Join(staging, id)
	if err := unix.Unmount(point, 0); err != nil {
		t.Fatal(err)
	}
	for _, n := range drivertest.LoopDevicesUnder(d.volumeFile(id)) {
		if err := (loopdev.Device{Number: n}).Detach(); err != nil {
			t.Fatal(err)
		}
	}
	d.restart(t)
	req := &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: drivertest.Capability(true)}
	if _, err := d.NodeStageVolume(ctx, req); err != nil {
		t.Fatalf("NodeStageVolume after a reboot: %v", err)
	}
	if n := d.devicesOf(id); n != 1 {
		t.Fatalf("after a reboot and NodeStageVolume %d loop devices back the volume, want 1", n)
	}
	blockDeviceSize(t, point)
	target := filepath.Join(t.TempDir(), "dev")
	if err := d.publish(id, staging, target, true); err != nil {
		t.Fatal(err)
	}
	blockDeviceSize(t, target)
	d.unpublishAndUnstage(t, id, staging, target)
}

// TestLoopExpand: ControllerExpandVolume of a block volume asks for node
// expansion, and NodeExpandVolume makes the device show the new size (a
// loop device keeps its size until LOOP_SET_CAPACITY).
func TestLoopExpand(t *testing.T) {
	d := newLoopDriver(t)
	ctx := context.Background()
	id, staging, target := d.publishedVolume(t, "loop-expand")
	grown := &csi.CapacityRange{RequiredBytes: 4 << 20}
	resp, err := d.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: grown, VolumeCapability: drivertest.Capability(true)})
	if err != nil || !resp.GetNodeExpansionRequired() {
		t.Fatalf("ControllerExpandVolume = %v, %v; want node_expansion_required", resp, err)
	}
	if size := blockDeviceSize(t, target); size != 1<<20 {
		t.Fatalf("device is %d bytes before NodeExpandVolume, want still %d (else this test proves nothing)", size, 1<<20)
	}
	if _, err := d.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: id, VolumePath: target, CapacityRange: grown}); err != nil {
		t.Fatal(err)
	}
	if size := blockDeviceSize(t, target); size != 4<<20 {
		t.Errorf("device is %d bytes after NodeExpandVolume, want %d", size, 4<<20)
	}
	d.unpublishAndUnstage(t, id, staging, target)
}

// TestLoopDevicesPerNode: node plugins of two nodes on one kernel sharing
// one data directory (kind's node containers) each attach their own
// device for the volume, and one node's unstage leaves the other's alone.
func TestLoopDevicesPerNode(t *testing.T) {
	a := newLoopDriver(t)
	b := &testDriver{Driver: drivertest.Start(t, drivertest.Options{World: testWorld, Config: func(c *plugin.Config) {
		c.ServeController, c.NodeID, c.DataDir = false, "node-2", a.dataDir()
		c.Mount, c.BlockDevices = "bind", plugin.BlockDevicesLoop
	}})}
	b.client = newCSIClient(t, b.Driver)
	ctx := context.Background()
	id, stagingA := a.stagedVolume(t, "loop-two-nodes", true)
	stagingB := b.stage(t, id, true)
	if n := a.devicesOf(id); n != 2 {
		t.Fatalf("%d loop devices back a volume staged on two nodes, want one each", n)
	}
	if _, err := a.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: stagingA}); err != nil {
		t.Fatal(err)
	}
	if n := a.devicesOf(id); n != 1 {
		t.Errorf("after one node's unstage %d loop devices back the volume, want the other node's", n)
	}
	if size := blockDeviceSize(t, filepath.Join(stagingB, id)); size != 1<<20 {
		t.Errorf("the other node's staged device is %d bytes, want %d", size, 1<<20)
	}
	if _, err := b.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: stagingB}); err != nil {
		t.Fatal(err)
	}
	if n := a.devicesOf(id); n != 0 {
		t.Errorf("after both unstages %d loop devices back the volume", n)
	}
}
