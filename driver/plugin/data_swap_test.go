package plugin

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sentinel is what the files outside the data root hold: a result that
// contains it was filled from outside the tenant's volume.
const sentinel = "SENTINEL: a file outside the data root"

// TestSymlinkSwapsStayInsideTheVolume plays a tenant who owns a source
// volume and, while the driver clones it and cuts and restores snapshots
// of it, keeps exchanging (renameat2 RENAME_EXCHANGE) a file and a
// directory with symlinks that point outside the data root, at a sentinel
// file and a directory holding one. Whatever the timing, a clone or a
// restore may only hold the tenant's own data, in whatever shape the swaps
// left it; never the sentinel. No call may fail because of the tenant's
// swaps either.
func TestSymlinkSwapsStayInsideTheVolume(t *testing.T) {
	const (
		minSwaps  = 1000
		minRounds = 40
	)
	// The tenant's files are as long as the sentinel, so that a copy whose
	// size came from one and whose content from the other is whole.
	tenant := strings.Repeat("t", len(sentinel))
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	mustWrite(t, filepath.Join(outside, "file"), sentinel)
	mustWrite(t, filepath.Join(outside, "dir", "secret"), sentinel)

	d, err := newDataDir(filepath.Join(base, "data"), true)
	if err != nil {
		t.Fatal(err)
	}
	const src = "zpv-000000000000000000000001"
	if err := d.createVolume(src, false, 1<<20, "", ""); err != nil {
		t.Fatal(err)
	}
	vol := d.volumePath(src, false)
	mustWrite(t, filepath.Join(vol, "f"), tenant)
	mustWrite(t, filepath.Join(vol, "d", "inner"), tenant)
	for link, target := range map[string]string{"lf": "file", "ld": "dir"} {
		if err := os.Symlink(filepath.Join(outside, target), filepath.Join(vol, link)); err != nil {
			t.Fatal(err)
		}
	}

	var swaps atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var swapErr error
	wg.Go(func() { swapErr = swapLoop(vol, stop, &swaps) })

	res := swapResults{targets: []string{filepath.Join(outside, "file"), filepath.Join(outside, "dir")}}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; (i < minRounds || swaps.Load() < minSwaps) && time.Now().Before(deadline); i++ {
		res.round(t, d, src, i)
	}
	close(stop)
	wg.Wait()
	if swapErr != nil {
		t.Fatalf("swapping: %v", swapErr)
	}

	t.Logf("%d swaps during %d clones and %d snapshots (%d restored); the sentinel in %d clones and %d restores; %d calls failed; %d files of tenant data copied",
		swaps.Load(), res.clones, res.snapshots, res.restores, res.leaked["clone"], res.leaked["restore"], len(res.failed), res.tenantFiles)
	if n := swaps.Load(); n < minSwaps {
		t.Fatalf("only %d swaps happened during the copies, want at least %d: the test proves nothing", n, minSwaps)
	}
	if len(res.leaks) > 0 {
		t.Errorf("%d files in the results hold the sentinel from outside the data root, e.g. %s", len(res.leaks), strings.Join(first(res.leaks, 5), "; "))
	}
	if len(res.failed) > 0 {
		t.Errorf("%d calls failed under the tenant's swaps, e.g. %s", len(res.failed), strings.Join(first(res.failed, 5), "; "))
	}
	if res.tenantFiles == 0 {
		t.Errorf("no result held the tenant's own data: the copies are empty, so the test proves nothing")
	}
}

// swapLoop exchanges the file and the directory with their symlinks until
// stop is closed, counting each exchange, and pauses briefly after each
// pair: a view that lasts a few system calls lets a racing copy complete
// with the wrong content instead of failing on an inconsistent view.
func swapLoop(vol string, stop <-chan struct{}, swaps *atomic.Int64) error {
	pairs := [][2]string{{"f", "lf"}, {"d", "ld"}}
	for {
		for _, p := range pairs {
			select {
			case <-stop:
				return nil
			default:
			}
			err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(vol, p[0]), unix.AT_FDCWD, filepath.Join(vol, p[1]), unix.RENAME_EXCHANGE)
			if err != nil {
				return err
			}
			swaps.Add(1)
		}
		time.Sleep(time.Microsecond)
	}
}

type swapResults struct {
	clones, snapshots, restores, tenantFiles int
	leaks, failed                            []string
	leaked                                   map[string]int // results holding the sentinel, by kind
	targets                                  []string       // the tenant's symlinks' targets
}

// round clones the source, cuts a snapshot of it and restores that, checks
// what each result holds, and removes them again.
func (r *swapResults) round(t *testing.T, d *dataDir, src string, i int) {
	t.Helper()
	clone, snap, restored := roundID(volumePrefix, 2*i+2), roundID(snapshotPrefix, i+2), roundID(volumePrefix, 2*i+3)
	r.clones++
	if err := d.createVolume(clone, false, 1<<20, "", src); err != nil {
		r.failed = append(r.failed, "clone: "+err.Error())
	} else {
		r.check(t, "clone", clone, d.volumePath(clone, false))
	}
	r.snapshots++
	if err := d.snapshot(snap, src, false); err != nil {
		r.failed = append(r.failed, "snapshot: "+err.Error())
	} else {
		r.restores++
		if err := d.createVolume(restored, false, 1<<20, snap, ""); err != nil {
			r.failed = append(r.failed, "restore: "+err.Error())
		} else {
			r.check(t, "restore", restored, d.volumePath(restored, false))
		}
	}
	// Usage walks the volume as a copy does; the swaps must not fail it.
	if _, _, err := d.usage(src); err != nil {
		r.failed = append(r.failed, "usage: "+err.Error())
	}
	for _, err := range []error{d.deleteVolume(clone), d.deleteVolume(restored), d.deleteSnapshot(snap)} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// check reads every entry of a result, never following a link (the result
// is the driver's own, nothing swaps in it): it may hold the tenant's
// entries in whatever shape the swaps left them, symlinks as symlinks with
// the tenant's targets, and nothing else.
func (r *swapResults) check(t *testing.T, kind, id, root string) {
	t.Helper()
	if r.leaked == nil {
		r.leaked = map[string]int{}
	}
	leaked := false
	what := kind + " " + id
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		switch {
		case e.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(data), sentinel) {
				r.leaks = append(r.leaks, what+" holds the sentinel at "+rel)
				leaked = true
				return nil
			}
			r.tenantFiles++
			if !slices.Contains([]string{"f", "lf", "d/inner", "ld/inner"}, rel) {
				t.Errorf("%s holds a file %s the tenant never made", what, rel)
			}
		case e.Type() == fs.ModeSymlink:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if !slices.Contains([]string{"f", "lf", "d", "ld"}, rel) || !slices.Contains(r.targets, target) {
				t.Errorf("%s holds a symlink %s -> %s the tenant never made", what, rel, target)
			}
		case e.IsDir():
			if rel != "d" && rel != "ld" {
				t.Errorf("%s holds a directory %s the tenant never made", what, rel)
			}
		default:
			t.Errorf("%s holds %s of type %v", what, rel, e.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", what, err)
	}
	if leaked {
		r.leaked[kind]++
	}
}

func roundID(prefix string, n int) string {
	const hex = "0123456789abcdef"
	id := []byte(strings.Repeat("0", 24))
	for i := len(id) - 1; n > 0; i-- {
		id[i] = hex[n%16]
		n /= 16
	}
	return prefix + string(id)
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }
