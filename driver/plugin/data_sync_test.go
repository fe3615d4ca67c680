package plugin

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestDataDirNotesEntries checks that every directory in which a create
// made an entry is synced by the next syncEntries, and only once.
func TestDataDirNotesEntries(t *testing.T) {
	d, err := newDataDir(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	d.syncDir = func(path string) error {
		err := syncDir(path)
		if err == nil {
			rel, _ := filepath.Rel(d.root, path)
			synced = append(synced, rel)
		}
		return err
	}
	const (
		src   = "zpv-00000000000000000000000a"
		block = "zpv-00000000000000000000000b"
		snap  = "zps-00000000000000000000000c"
		bsnap = "zps-00000000000000000000000d"
		restd = "zpv-00000000000000000000000e"
	)
	for _, tt := range []struct {
		name string
		do   func() error
		want []string
	}{
		{"empty volume", func() error { return d.createVolume(src, false, 1<<20, "", "") }, []string{"volumes"}},
		{"block volume", func() error { return d.createVolume(block, true, 1<<20, "", "") }, []string{"volumes"}},
		{"snapshot", func() error {
			if err := os.MkdirAll(filepath.Join(d.volumePath(src, false), "a", "b"), 0o750); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d.volumePath(src, false), "a", "b", "f"), []byte("data"), 0o600); err != nil {
				return err
			}
			return d.snapshot(snap, src, false)
		}, []string{"snapshots"}},
		{"block snapshot", func() error { return d.snapshot(bsnap, block, true) }, []string{"snapshots"}},
		{"restore", func() error { return d.createVolume(restd, false, 1<<20, snap, "") },
			[]string{"volumes", "volumes/" + restd, "volumes/" + restd + "/a", "volumes/" + restd + "/a/b"}},
		{"a create whose data was removed again", func() error {
			if err := d.createVolume("zpv-00000000000000000000000f", false, 1<<20, snap, ""); err != nil {
				return err
			}
			if err := d.createVolume("zpv-000000000000000000000010", false, 1<<20, "", ""); err != nil {
				return err
			}
			return d.deleteVolume("zpv-00000000000000000000000f")
		}, []string{"volumes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synced = nil
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			if err := d.syncEntries(); err != nil {
				t.Fatal(err)
			}
			slices.Sort(synced)
			if !slices.Equal(synced, tt.want) {
				t.Errorf("synced directories %q, want %q", synced, tt.want)
			}
			synced = nil
			if err := d.syncEntries(); err != nil || len(synced) > 0 {
				t.Errorf("second syncEntries synced %q (%v), want nothing", synced, err)
			}
		})
	}
}

// TestEntriesDurableBeforeRecord checks the order that matters in a power
// cut: the directory entry of a new volume or snapshot is synced while
// its record is not yet durable, never after.
func TestEntriesDurableBeforeRecord(t *testing.T) {
	p := mustNew(t, Config{StateDir: t.TempDir(), ServeController: true, Mount: "none"})
	defer p.Close()
	durable := map[string]int{} // synced directory -> durable records at the time
	p.data.syncDir = func(path string) error {
		rel, _ := filepath.Rel(p.data.root, path)
		vols, _ := p.store.ListVolumes("", 0)
		snaps, _ := p.store.ListSnapshots("", 0, "")
		durable[rel] = len(vols) + len(snaps)
		return syncDir(path)
	}
	ctx := context.Background()
	v, err := p.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: v.GetVolume().GetVolumeId()}); err != nil {
		t.Fatal(err)
	}
	// volumes/ before the volume's record; snapshots/ before the
	// snapshot's, with only the volume's durable.
	if want := map[string]int{"volumes": 0, "snapshots": 1}; !maps.Equal(durable, want) {
		t.Errorf("synced directories with the durable records at the time: %v, want %v", durable, want)
	}
}

func mustNew(t *testing.T, cfg Config) *Plugin {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
