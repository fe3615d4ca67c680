package plugin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	mountutils "k8s.io/mount-utils"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// stagedVolume creates a 1Mi volume of the access type and stages it.
func (d *testDriver) stagedVolume(t *testing.T, name string, block bool) (id, staging string) {
	t.Helper()
	id = d.mustCreateVolume(sizedRequest(name, block, &csi.CapacityRange{RequiredBytes: 1 << 20})).GetVolumeId()
	return id, d.stage(t, id, block)
}

// stage stages a volume in a directory the test made, as a CO does; it is
// unstaged when the test ends.
func (d *testDriver) stage(t *testing.T, id string, block bool) (staging string) {
	t.Helper()
	ctx := context.Background()
	staging = filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: drivertest.Capability(block)}); err != nil {
		t.Fatalf("NodeStageVolume of a %s volume: %v", accessName(block), err)
	}
	t.Cleanup(func() {
		d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
	})
	return staging
}

func (d *testDriver) publish(id, staging, target string, block bool) error {
	_, err := d.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: drivertest.Capability(block),
	})
	return err
}

// TestNodeControlCharactersAreInvalid: a path or context with a control
// character is INVALID_ARGUMENT (CSI General Error Table: "Invalid or
// unsupported field in the request"), never INTERNAL from a kernel that
// refuses a path with NUL, nor a mount at a path with a newline that
// /proc/mounts then shows garbled.
func TestNodeControlCharactersAreInvalid(t *testing.T) {
	d := newTestDriver(t, nil)
	vol, staging := d.stagedVolume(t, "ctl-node", false)
	target := filepath.Join(t.TempDir(), "target")
	publish := func(mutate func(*csi.NodePublishVolumeRequest)) func() error {
		req := &csi.NodePublishVolumeRequest{VolumeId: vol, TargetPath: target, StagingTargetPath: staging, VolumeCapability: drivertest.MountCapability()}
		mutate(req)
		return errOf(d.NodePublishVolume, req)
	}
	runCodeCases(t, []codeCase{
		{"NodeStageVolume staging path with NUL", errOf(d.NodeStageVolume, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging + "\x00x", VolumeCapability: drivertest.MountCapability()}), codes.InvalidArgument},
		{"NodeStageVolume volume_context key with newline", errOf(d.NodeStageVolume, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging, VolumeCapability: drivertest.MountCapability(), VolumeContext: map[string]string{"a\nb": "v"}}), codes.InvalidArgument},
		{"NodePublishVolume target path with NUL", publish(func(r *csi.NodePublishVolumeRequest) { r.TargetPath = target + "\x00" }), codes.InvalidArgument},
		{"NodePublishVolume target path with newline", publish(func(r *csi.NodePublishVolumeRequest) { r.TargetPath = target + "\nx" }), codes.InvalidArgument},
		{"NodePublishVolume staging path with NUL", publish(func(r *csi.NodePublishVolumeRequest) { r.StagingTargetPath = staging + "\x00" }), codes.InvalidArgument},
		{"NodePublishVolume volume_context value with NUL", publish(func(r *csi.NodePublishVolumeRequest) { r.VolumeContext = map[string]string{"k": "\x00"} }), codes.InvalidArgument},
		{"NodePublishVolume publish_context value with NUL", publish(func(r *csi.NodePublishVolumeRequest) { r.PublishContext = map[string]string{"k": "\x00"} }), codes.InvalidArgument},
		{"NodeUnpublishVolume target path with NUL", errOf(d.NodeUnpublishVolume, &csi.NodeUnpublishVolumeRequest{VolumeId: vol, TargetPath: target + "\x00"}), codes.InvalidArgument},
		{"NodeUnstageVolume staging path with NUL", errOf(d.NodeUnstageVolume, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging + "\x00"}), codes.InvalidArgument},
		{"NodeGetVolumeStats volume path with NUL", errOf(d.NodeGetVolumeStats, &csi.NodeGetVolumeStatsRequest{VolumeId: vol, VolumePath: staging + "\x00"}), codes.InvalidArgument},
		{"NodeExpandVolume volume path with NUL", errOf(d.NodeExpandVolume, &csi.NodeExpandVolumeRequest{VolumeId: vol, VolumePath: staging + "\x00"}), codes.InvalidArgument},
	})
	assertAbsent(t, "a refused publish made its target", target)
}

// TestNodePublishRequiresStaging: the driver advertises
// STAGE_UNSTAGE_VOLUME, so NodePublishVolume without a staging path is
// FAILED_PRECONDITION (CSI: NodePublishVolume Errors, "Staging target path
// not set"), and so is a staging path the volume was never staged at (the
// recovery the spec asks for is the same: call NodeStageVolume first).
func TestNodePublishRequiresStaging(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(accessName(block), func(t *testing.T) {
			d := newTestDriver(t, nil)
			id := d.mustCreateVolume(sizedRequest("unstaged", block, nil)).GetVolumeId()
			dir := t.TempDir()
			runCodeCases(t, []codeCase{
				{"no staging path", func() error { return d.publish(id, "", filepath.Join(dir, "t1"), block) }, codes.FailedPrecondition},
				{"never staged there", func() error { return d.publish(id, dir, filepath.Join(dir, "t2"), block) }, codes.FailedPrecondition},
			})
			assertAbsent(t, "a refused publish left its target", filepath.Join(dir, "t1"), filepath.Join(dir, "t2"))
		})
	}
}

// TestNodePathsTheCOOwns: the CO creates a target's parent and the
// staging directory (CSI: NodePublishVolumeRequest.target_path "The CO
// SHALL ensure that the parent directory of this path exists";
// NodeStageVolumeRequest.staging_target_path "The CO SHALL be responsible
// for creating the directory"). Without them the request is
// FAILED_PRECONDITION: well-formed, but the node is not in the state the
// call needs, and the driver does not create what the CO owns. `/` and a
// path directly under it are never a CO's own directory: INVALID_ARGUMENT.
func TestNodePathsTheCOOwns(t *testing.T) {
	d := newTestDriver(t, nil)
	id, staging := d.stagedVolume(t, "paths", false)
	dir := t.TempDir()
	aFile := filepath.Join(dir, "a-file")
	writeAt(t, aFile, []byte("not a directory"))
	stage := func(path string) func() error {
		return errOf(d.NodeStageVolume, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: path, VolumeCapability: drivertest.MountCapability()})
	}
	runCodeCases(t, []codeCase{
		{"publish at /", func() error { return d.publish(id, staging, "/", false) }, codes.InvalidArgument},
		{"publish directly under /", func() error { return d.publish(id, staging, "/zonepath-target", false) }, codes.InvalidArgument},
		{"publish with a missing parent", func() error { return d.publish(id, staging, filepath.Join(dir, "missing", "target"), false) }, codes.FailedPrecondition},
		{"stage at /", stage("/"), codes.InvalidArgument},
		{"stage directly under /", stage("/zonepath-staging"), codes.InvalidArgument},
		{"stage at a missing directory", stage(filepath.Join(dir, "missing-staging")), codes.FailedPrecondition},
		{"stage at a file", stage(aFile), codes.FailedPrecondition},
		{"publish a filesystem volume at an existing file", func() error { return d.publish(id, staging, aFile, false) }, codes.FailedPrecondition},
	})
	assertAbsent(t, "a refused request created a path", "/zonepath-target", "/zonepath-staging", filepath.Join(dir, "missing"), filepath.Join(dir, "missing-staging"))
}

// TestNodeUnpublishLeavesWhatItDidNotMake: NodeUnpublishVolume and
// NodeUnstageVolume at a path the volume is not published or staged at
// succeed (CSI: both are idempotent; NodeUnstageVolume "If the volume ...
// is not staged to the staging_target_path, the Plugin MUST reply 0 OK")
// and touch nothing there: not another's mount, not a user's files. The
// staging directory is the CO's and stays after NodeUnstageVolume.
func TestNodeUnpublishLeavesWhatItDidNotMake(t *testing.T) {
	d := newTestDriver(t, nil)
	ctx := context.Background()
	id, staging := d.stagedVolume(t, "leave", false)
	dir := t.TempDir()

	userDir := filepath.Join(dir, "user")
	if err := os.MkdirAll(userDir, 0o750); err != nil {
		t.Fatal(err)
	}
	writeAt(t, filepath.Join(userDir, "keep"), []byte("user data"))
	if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: userDir}); err != nil {
		t.Fatalf("NodeUnpublishVolume where the volume was never published: %v", err)
	}
	if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: userDir}); err != nil {
		t.Fatalf("NodeUnstageVolume where the volume was never staged: %v", err)
	}
	if _, err := os.Stat(filepath.Join(userDir, "keep")); err != nil {
		t.Fatalf("a user's file is gone: %v", err)
	}

	if d.Plugin.MountKind() == "bind" {
		foreign, source := filepath.Join(dir, "foreign"), filepath.Join(dir, "foreign-source")
		for _, p := range []string{foreign, source} {
			if err := os.Mkdir(p, 0o750); err != nil {
				t.Fatal(err)
			}
		}
		m := mountutils.New("")
		if err := m.Mount(source, foreign, "", []string{"bind"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Unmount(foreign) })
		if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: foreign}); err != nil {
			t.Fatalf("NodeUnpublishVolume at another's mount: %v", err)
		}
		if !isMountPoint(foreign) {
			t.Fatal("NodeUnpublishVolume unmounted a mount the driver did not make")
		}

		// Another's mount over the driver's own at a target it published.
		target := filepath.Join(dir, "target")
		if err := d.publish(id, staging, target, false); err != nil {
			t.Fatal(err)
		}
		if err := m.Mount(source, target, "", []string{"bind"}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); codeOf(err) != codes.FailedPrecondition {
			t.Fatalf("NodeUnpublishVolume under another's mount: %v, want FailedPrecondition", err)
		}
		if err := m.Unmount(target); err != nil {
			t.Fatalf("another's mount over the target is gone: %v", err)
		}
		if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
			t.Fatalf("NodeUnpublishVolume once the other mount is gone: %v", err)
		}
		assertAbsent(t, "NodeUnpublishVolume left its target", target)
	}

	if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(staging); err != nil || !st.IsDir() {
		t.Fatalf("NodeUnstageVolume removed the CO's staging directory: %v", err)
	}
	if isMountPoint(staging) {
		t.Fatal("NodeUnstageVolume left the staging mount")
	}
}

// TestBlockVolumeOnTheNode: a block volume is staged (a file the driver
// places inside the CO's staging directory) and published at target_path
// (CSI "the SP SHALL place the block device at target_path"): with loop
// devices both are bind mounts of the volume's loop device node, with
// --block-devices=file of its backing file; bytes written through the
// published path are in the backing file. Without bind mounts
// (--mount none) the paths are made all the same.
func TestBlockVolumeOnTheNode(t *testing.T) {
	for _, c := range []struct{ name, mount, blocks string }{
		{"loop devices", "bind", plugin.BlockDevicesLoop},
		{"bind-mounted files", "auto", plugin.BlockDevicesFile},
		{"no mounts", "none", plugin.BlockDevicesFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.blocks == plugin.BlockDevicesLoop {
				drivertest.RequireLoopDevices(t)
			}
			d := newTestDriver(t, func(cfg *plugin.Config) { cfg.Mount, cfg.BlockDevices = c.mount, c.blocks })
			if c.mount == "auto" && d.Plugin.MountKind() != "bind" {
				t.Skip("--mount auto found no bind mounts here (needs CAP_SYS_ADMIN); the none case checks the paths")
			}
			ctx := context.Background()
			id, staging := d.stagedVolume(t, "block-node", true)
			target := filepath.Join(t.TempDir(), "device")
			for i := 0; i < 2; i++ { // idempotent (CSI: NodePublishVolume)
				if err := d.publish(id, staging, target, true); err != nil {
					t.Fatalf("NodePublishVolume of a block volume: %v", err)
				}
			}
			st, err := os.Stat(target)
			isDevice := err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0
			if err != nil || isDevice != (c.blocks == plugin.BlockDevicesLoop) || !isDevice && !st.Mode().IsRegular() {
				t.Fatalf("target %s: %v, %v; want a block device with loop devices, else a file", target, st.Mode(), err)
			}
			if d.Plugin.MountKind() == "bind" {
				if !isMountPoint(target) {
					t.Fatal("the block target is not a mount")
				}
				payload := []byte("written through the published block device")
				writeAt(t, target, payload)
				got := make([]byte, len(payload))
				f, err := os.Open(filepath.Join(d.dataDir(), "volumes", id+".img"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("backing file holds %q (%v), want %q", got, err, payload)
				}
			}
			for i := 0; i < 2; i++ {
				if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
					t.Fatal(err)
				}
			}
			assertAbsent(t, "NodeUnpublishVolume left the target file", target)
			if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
				t.Fatal(err)
			}
			if entries, err := os.ReadDir(staging); err != nil || len(entries) != 0 {
				t.Fatalf("NodeUnstageVolume left %v in the staging directory (%v)", entries, err)
			}
		})
	}
}

// TestDataSurvivesSnapshotAndRestore writes through a published volume,
// snapshots it, restores the snapshot into a new volume and reads the
// data back through that volume's publish path, for filesystem and block
// volumes. With bind mounts the bytes really travel through the mounts.
func TestDataSurvivesSnapshotAndRestore(t *testing.T) {
	for _, tt := range []struct {
		name  string
		block bool
	}{{"filesystem", false}, {"block", true}} {
		t.Run(tt.name, func(t *testing.T) {
			d := newTestDriver(t, nil)
			ctx := context.Background()
			create := func(name string, src *csi.VolumeContentSource) string {
				req := sizedRequest(name, tt.block, &csi.CapacityRange{RequiredBytes: 1 << 20})
				req.VolumeContentSource = src
				return d.mustCreateVolume(req).GetVolumeId()
			}
			publish := func(id string) (path string, mounted bool) {
				target := filepath.Join(t.TempDir(), "target")
				if err := d.publish(id, d.stage(t, id, tt.block), target, tt.block); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
				})
				file := target
				if !tt.block {
					file = filepath.Join(target, "data")
				}
				return file, isMountPoint(target)
			}
			payload := []byte("zonepath keeps this across a snapshot")
			src := create("data-source", nil)
			path, mounted := publish(src)
			if !mounted {
				t.Skip("the driver cannot bind-mount here (needs root): no data path to test")
			}
			writeAt(t, path, payload)
			snap := d.mustCreateSnapshot("data-snap", src, nil)
			restored := create("data-restored", drivertest.FromSnapshot(snap.GetSnapshotId()))
			path, _ = publish(restored)
			got := make([]byte, len(payload))
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("restored volume holds %q (%v), want %q", got, err, payload)
			}
		})
	}
}

func writeAt(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil { // a block device's writes too
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func isMountPoint(path string) bool {
	mounted, err := mountutils.New("").IsMountPoint(path)
	return err == nil && mounted
}

// TestOneVolumeAtTwoStagingPaths: two PersistentVolumes with one
// volumeHandle used on one node (Kubernetes' provisioning suite, "should
// mount multiple PV pointing to the same storage on the same node",
// capability multiplePVsSameID) reach the driver as one stage today, since
// kubelet stages at a path derived from the handle; a CO that stages per
// PV sends two. CSI forbids neither, so each stage and the publish from it
// is kept on its own: what is written through one is read through the
// other, and unstaging one leaves the other's publish working.
func TestOneVolumeAtTwoStagingPaths(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(accessName(block), func(t *testing.T) {
			d := newTestDriver(t, nil)
			ctx := context.Background()
			id, first := d.stagedVolume(t, "two-stagings", block)
			second := d.stage(t, id, block)
			targets := [2]string{filepath.Join(t.TempDir(), "t1"), filepath.Join(t.TempDir(), "t2")}
			for i, staging := range []string{first, second} {
				if err := d.publish(id, staging, targets[i], block); err != nil {
					t.Fatalf("NodePublishVolume from staging path %d: %v", i+1, err)
				}
			}
			if !isMountPoint(targets[0]) {
				t.Skip("the driver cannot bind-mount here (needs root): no data path to test")
			}
			file := func(target string) string {
				if block {
					return target
				}
				return filepath.Join(target, "data")
			}
			payload := []byte("one volume, two staging paths")
			writeAt(t, file(targets[0]), payload)
			if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: targets[0]}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: first}); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(file(targets[1]))
			if err != nil || !bytes.HasPrefix(got, payload) {
				t.Fatalf("through the second staging path's publish after the first was unstaged: %.40q (%v), want %q", got, err, payload)
			}
			if _, err := d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: targets[1]}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
