package datapath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSwapBetweenStatAndOpen replaces a file and a directory by symlinks
// to a sentinel outside the volume in the narrowest window there is:
// after the walk looked at the entry, before it opens it. The copy must
// hold the symlinks, never what they point to. O_NOFOLLOW and the check
// that the opened inode is the one looked at each close this window;
// without both, the clone reads the sentinel.
func TestSwapBetweenStatAndOpen(t *testing.T) {
	for _, op := range []struct {
		name string
		copy func(dst, src string) error
	}{
		{"restore", func(dst, src string) error { return restoreCopy(dst, src, nil) }},
		{"clone", func(dst, src string) error { _, err := Clone(dst, src, nil); return err }},
	} {
		t.Run(op.name, func(t *testing.T) {
			base := t.TempDir()
			src, dst, outside := filepath.Join(base, "src"), filepath.Join(base, "dst"), filepath.Join(base, "outside")
			for _, d := range []string{src, dst, outside} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			file(t, base, "outside/secret", "SENTINEL", 0o644)
			file(t, src, "f", "tenant", 0o644)
			dir(t, src, "d", 0o755)
			file(t, src, "d/inner", "tenant", 0o644)
			swapped := map[string]string{"f": filepath.Join(outside, "secret"), "d": outside}
			afterStat = func(name string) {
				target, ok := swapped[name]
				if !ok {
					return
				}
				delete(swapped, name) // once: the walk looks again and finds the link
				if err := os.RemoveAll(filepath.Join(src, name)); err != nil {
					t.Error(err)
				}
				if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
					t.Error(err)
				}
			}
			defer func() { afterStat = nil }()
			if err := op.copy(dst, src); err != nil {
				t.Fatal(err)
			}
			if len(swapped) > 0 {
				t.Fatalf("the walk never opened %v: the swap did not happen", swapped)
			}
			err := filepath.WalkDir(dst, func(path string, e os.DirEntry, err error) error {
				if err != nil || !e.Type().IsRegular() {
					return err
				}
				data, err := os.ReadFile(path)
				if err == nil && strings.Contains(string(data), "SENTINEL") {
					t.Errorf("%s in the %s holds the sentinel from outside the volume", path, op.name)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"f", "d"} {
				if st, err := os.Lstat(filepath.Join(dst, name)); err != nil || st.Mode()&os.ModeSymlink == 0 {
					t.Errorf("%s in the %s: %v, err %v; want the tenant's symlink", name, op.name, st, err)
				}
			}
		})
	}
}
