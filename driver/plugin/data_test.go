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
