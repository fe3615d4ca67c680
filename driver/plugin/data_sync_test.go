package plugin

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDataDirSyncsEntries checks that every directory whose entries a
// create changed is fsynced before the call returns, so that the record
// committed next never outlives the entry in a power cut.
func TestDataDirSyncsEntries(t *testing.T) {
	d, err := newDataDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	d.syncDir = func(path string) error {
		rel, _ := filepath.Rel(d.root, path)
		synced = append(synced, rel)
		return syncDir(path)
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
		{"empty volume", func() error { return d.createVolume(src, false, 1<<20, "", "") },
			[]string{"volumes/" + src, "volumes"}},
		{"block volume", func() error { return d.createVolume(block, true, 1<<20, "", "") },
			[]string{"volumes"}},
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
			[]string{"volumes/" + restd + "/a/b", "volumes/" + restd + "/a", "volumes/" + restd, "volumes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synced = nil
			if err := tt.do(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(synced, tt.want) {
				t.Errorf("fsynced directories %q, want %q", synced, tt.want)
			}
		})
	}
}
