package plugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/datapath"
)

// TestTenantLayoutThroughRPCs cuts a snapshot of a volume holding what a
// database's data directory may (a unix socket, a FIFO, symlinks, a
// private file) through CreateSnapshot, restores it and clones the volume
// through CreateVolume: every call succeeds, the socket is left out, the
// rest comes back as it was. datapath's TestFidelity covers each kind of
// entry; this covers the plugin's use of it.
func TestTenantLayoutThroughRPCs(t *testing.T) {
	p := mustNew(t, Config{StateDir: t.TempDir(), ServeController: true, Mount: "none"})
	defer p.Close()
	ctx := context.Background()
	src := createVolume(t, p, "src", nil)
	vol := p.data.volumePath(src, false)
	mustWrite(t, filepath.Join(vol, "data", "private"), "rows")
	for _, step := range []error{
		os.Chmod(filepath.Join(vol, "data", "private"), 0o600),
		os.Symlink("private", filepath.Join(vol, "data", "current")),
		os.Symlink("/etc/passwd", filepath.Join(vol, "data", "outside")),
		unix.Mkfifo(filepath.Join(vol, "data", "fifo"), 0o620),
	} {
		if step != nil {
			t.Fatal(step)
		}
	}
	l, err := net.Listen("unix", filepath.Join(vol, "data", "mysql.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	snap, err := p.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: src})
	if err != nil {
		t.Fatalf("CreateSnapshot of a volume holding a socket: %v", err)
	}
	copies := map[string]string{
		"restore": createVolume(t, p, "restored", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}),
		"clone": createVolume(t, p, "cloned", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src}}}),
	}
	for what, id := range copies {
		dir := filepath.Join(p.data.volumePath(id, false), "data")
		if data, err := os.ReadFile(filepath.Join(dir, "private")); err != nil || string(data) != "rows" {
			t.Errorf("%s: private holds %q (%v), want %q", what, data, err, "rows")
		}
		if st, err := os.Lstat(filepath.Join(dir, "private")); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: private's mode %v (%v), want 0600", what, st.Mode(), err)
		}
		for link, want := range map[string]string{"current": "private", "outside": "/etc/passwd"} {
			if got, err := os.Readlink(filepath.Join(dir, link)); err != nil || got != want {
				t.Errorf("%s: %s is a symlink to %q (%v), want %q", what, link, got, err, want)
			}
		}
		if st, err := os.Lstat(filepath.Join(dir, "fifo")); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s: fifo is %v (%v), want a FIFO", what, st.Mode(), err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "mysql.sock")); !os.IsNotExist(err) {
			t.Errorf("%s: the socket was copied (%v), want it left out", what, err)
		}
	}
	if _, inodes, err := p.data.usage(src); err != nil || inodes != 7 {
		t.Errorf("usage of the source: %d inodes (%v), want 7: root, data and its five entries", inodes, err)
	}
}

// TestTooDeepATreeIsFailedPrecondition nests a tenant's directories one
// level deeper than a copy may walk: a snapshot and a clone of the volume
// answer FAILED_PRECONDITION naming the limit, since the tenant's layout
// has to change before any retry can succeed, and INTERNAL would say the
// driver failed. The same volume one level shallower copies fine.
func TestTooDeepATreeIsFailedPrecondition(t *testing.T) {
	p := mustNew(t, Config{StateDir: t.TempDir(), ServeController: true, Mount: "none"})
	defer p.Close()
	ctx := context.Background()
	src := createVolume(t, p, "deep", nil)
	nested := filepath.Join(p.data.volumePath(src, false), strings.Repeat("d/", datapath.MaxDepth+1))
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	clone := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
		Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src}}}
	calls := map[string]func() error{
		"CreateSnapshot": func() error {
			_, err := p.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: src})
			return err
		},
		"CreateVolume from a volume": func() error {
			_, err := p.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "clone", VolumeContentSource: clone,
				VolumeCapabilities: []*csi.VolumeCapability{mountCapability()}})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), datapath.ErrTooDeep.Error()) {
			t.Errorf("%s of a tree nested %d levels deep: %v; want FAILED_PRECONDITION naming the limit", name, datapath.MaxDepth+1, err)
		}
		if len(status.Convert(err).Message()) > 256 {
			t.Errorf("%s: a message of %d bytes, more than an event shows whole: %.300s", name, len(status.Convert(err).Message()), err)
		}
	}
	if err := os.Remove(nested); err != nil {
		t.Fatal(err)
	}
	for name, call := range calls {
		if err := call(); err != nil {
			t.Errorf("%s of a tree nested %d levels deep: %v", name, datapath.MaxDepth, err)
		}
	}
}

// TestDataStatus checks which failures of a copy are the tenant's layout.
func TestDataStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want codes.Code
	}{
		{fmt.Errorf("%q: %w", "d/d", datapath.ErrTooDeep), codes.FailedPrecondition},
		{errors.New("refusing to restore the archive"), codes.Internal},
		{os.ErrPermission, codes.Internal},
	} {
		if got := status.Code(dataStatus(tt.err, "copying volume %s", "v")); got != tt.want {
			t.Errorf("dataStatus(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func createVolume(t *testing.T, p *Plugin, name string, source *csi.VolumeContentSource) string {
	t.Helper()
	v, err := p.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: name, VolumeContentSource: source,
		VolumeCapabilities: []*csi.VolumeCapability{mountCapability()}})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	return v.GetVolume().GetVolumeId()
}
