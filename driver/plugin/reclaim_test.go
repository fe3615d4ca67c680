package plugin

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

const (
	liveVolume   = "zpv-18eab07cc0aa1deb715bae7d"
	liveSnapshot = "zps-18eab07cc0aa1deb715bae7e"
	goneVolume   = "zpv-18eab07cc0aa1deb00000001"
	goneSnapshot = "zps-18eab07cc0aa1deb00000002"
)

// TestReclaim checks what start-up removes from the data directory: data
// no record points to and temporary files, of IDs the driver issues, and
// nothing else.
func TestReclaim(t *testing.T) {
	for _, tt := range []struct {
		name string
		path string // below the data directory; a trailing / makes a directory
		kept bool
	}{
		{"orphan volume directory", "volumes/" + goneVolume + "/", false},
		{"orphan volume directory with files", "volumes/" + goneVolume + "/sub/file", false},
		{"orphan block volume", "volumes/" + goneVolume + ".img", false},
		{"orphan snapshot archive", "snapshots/" + goneSnapshot + ".tar", false},
		{"orphan block snapshot", "snapshots/" + goneSnapshot + ".img", false},
		{"temporary snapshot archive", "snapshots/" + goneSnapshot + ".tar.tmp", false},
		{"temporary block snapshot", "snapshots/" + goneSnapshot + ".img.tmp", false},
		{"temporary file of a recorded snapshot", "snapshots/" + liveSnapshot + ".tar.tmp", false},
		{"temporary volume file", "volumes/" + goneVolume + ".img.tmp", false},

		{"live volume directory", "volumes/" + liveVolume + "/data", true},
		{"live block volume", "volumes/" + liveVolume + ".img", true},
		{"live snapshot archive", "snapshots/" + liveSnapshot + ".tar", true},
		{"live block snapshot", "snapshots/" + liveSnapshot + ".img", true},

		{"name the driver never issues", "volumes/pvc-0123", true},
		{"uppercase hex", "volumes/zpv-" + strings.ToUpper(goneVolume[4:]) + "/", true},
		{"ID one digit short", "volumes/" + goneVolume[:len(goneVolume)-1] + "/", true},
		{"ID with a suffix", "volumes/" + goneVolume + "-x/", true},
		{"snapshot ID among volumes", "volumes/" + goneSnapshot + "/", true},
		{"volume ID among snapshots", "snapshots/" + goneVolume + ".tar", true},
		{"snapshot without an extension", "snapshots/" + goneSnapshot, true},
		{"unknown extension", "snapshots/" + goneSnapshot + ".zip", true},
		{"temporary file of a name never issued", "snapshots/backup.tar.tmp", true},
		{"hidden file", "volumes/." + goneVolume + "/", true},
		{"file in the data directory itself", goneVolume, true},
		{"controller lock", controllerLockFile, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := newDataDir(t.TempDir(), false)
			if err != nil {
				t.Fatal(err)
			}
			top := makeEntry(t, d.root, tt.path)
			removed, err := d.reclaim(func(id string) bool { return id == liveVolume || id == liveSnapshot })
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Lstat(top)
			switch {
			case tt.kept && statErr != nil:
				t.Errorf("reclaim removed %s, want it kept (removed %v)", tt.path, removed)
			case !tt.kept && statErr == nil:
				t.Errorf("reclaim kept %s, want it removed", tt.path)
			case !tt.kept && !slices.Equal(removed, []string{top}):
				t.Errorf("reclaim reported %v removed, want [%s]", removed, top)
			}
		})
	}
}

// TestIssuedIDMatchesNewID keeps reclaim in step with newID: an ID format
// reclaim does not know would leave every orphan behind.
func TestIssuedIDMatchesNewID(t *testing.T) {
	for _, prefix := range []string{volumePrefix, snapshotPrefix} {
		if id := newID(prefix); !issuedID.MatchString(id) {
			t.Errorf("newID(%q) = %q, which reclaim does not recognise", prefix, id)
		}
	}
}

// makeEntry creates path below root and returns its first element below
// volumes/ or snapshots/ (or root), the entry reclaim judges.
func makeEntry(t *testing.T, root, path string) string {
	t.Helper()
	full := filepath.Join(root, path)
	if strings.HasSuffix(path, "/") {
		if err := os.MkdirAll(full, 0o750); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	parts := strings.SplitN(strings.TrimSuffix(path, "/"), "/", 3)
	if len(parts) == 1 {
		return filepath.Join(root, parts[0])
	}
	return filepath.Join(root, parts[0], parts[1])
}

// TestStartupReclaimOnlyInTheController starts the processes that share a
// data directory: only the controller, which owns the records, reclaims;
// a node plugin, whose state has no volumes, must leave the controller's
// data alone; a second controller on the same data directory is refused.
func TestStartupReclaimOnlyInTheController(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	controller := Config{StateDir: filepath.Join(dir, "controller"), DataDir: data, ServeController: true, Mount: "none"}
	node := Config{StateDir: filepath.Join(dir, "node"), DataDir: data, ServeNode: true, NodeID: "node-1", Mount: "none"}

	p := mustNew(t, controller)
	resp, err := p.CreateVolume(context.Background(), &csi.CreateVolumeRequest{Name: "live", VolumeCapabilities: []*csi.VolumeCapability{{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(data, "volumes", resp.GetVolume().GetVolumeId())
	second := controller
	second.StateDir = filepath.Join(dir, "second")
	if _, err := New(second); err == nil || !strings.Contains(err.Error(), "in use by another controller") {
		t.Errorf("second controller on the data directory: error %v, want it refused", err)
	}
	p.Close()

	orphans := []string{makeEntry(t, data, "volumes/"+goneVolume+"/"), makeEntry(t, data, "snapshots/"+goneSnapshot+".tar.tmp")}
	n := mustNew(t, node)
	defer n.Close()
	for _, path := range append(orphans, live) {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("node plugin start-up removed %s: %v", path, err)
		}
	}

	mustNew(t, controller).Close()
	for _, path := range orphans {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("controller start-up kept orphan %s", path)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("controller start-up removed the live volume's data: %v", err)
	}
}
