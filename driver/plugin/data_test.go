package plugin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	mountutils "k8s.io/mount-utils"
)

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
			c := newClient(t, "")
			ctx := context.Background()
			capability := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}
			if tt.block {
				capability.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
			} else {
				capability.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}}
			}
			create := func(name string, src *csi.VolumeContentSource) string {
				req := volumeRequest(name, 1<<20, nil)
				req.VolumeCapabilities = []*csi.VolumeCapability{capability}
				req.VolumeContentSource = src
				return c.mustCreateVolume(req).GetVolumeId()
			}
			publish := func(id string) (path string, mounted bool) {
				target := filepath.Join(t.TempDir(), "target")
				if _, err := c.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: capability}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					c.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
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
			snap := c.mustCreateSnapshot("data-snap", src, nil)
			restored := create("data-restored", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshotId()}}})
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
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func isMountPoint(path string) bool {
	mounted, err := mountutils.New("").IsMountPoint(path)
	return err == nil && mounted
}
