package datapath

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// version is the content of the rewritten file's n-th complete version:
// one line repeated, so that a torn or mixed copy is told from a whole one.
func version(n int64) string {
	return strings.Repeat(fmt.Sprintf("version %08d\n", n), 512)
}

// whole reports whether data is one complete version.
func whole(data []byte) bool {
	line, _, ok := bytes.Cut(data, []byte("\n"))
	return ok && string(data) == strings.Repeat(string(line)+"\n", 512) && strings.HasPrefix(string(line), "version ")
}

// rewriter rewrites root/f in a tight loop the way applications update a
// file atomically: write f.tmp whole, rename it over f. f always exists
// and always holds one complete version.
type rewriter struct {
	renames atomic.Int64
	err     error
}

func (r *rewriter) run(root string, stop <-chan struct{}) {
	for n := int64(1); ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		tmp := filepath.Join(root, "f.tmp")
		if err := os.WriteFile(tmp, []byte(version(n)), 0o644); err != nil {
			r.err = err
			return
		}
		if err := os.Rename(tmp, filepath.Join(root, "f")); err != nil {
			r.err = err
			return
		}
		r.renames.Add(1)
	}
}

// awaitRename waits until the rewriter renamed over f again, so that the
// name the walk looked at holds another inode by the time it opens it.
func (r *rewriter) awaitRename() {
	seen := r.renames.Load()
	for deadline := time.Now().Add(time.Second); r.renames.Load() == seen && time.Now().Before(deadline); {
		time.Sleep(10 * time.Microsecond)
	}
}

// TestWriteThenRenameIsNeverMissed cuts many snapshots and clones of a
// volume while an application rewrites a file by write-then-rename in a
// tight loop. The file exists at every instant, so every copy must hold
// it, as one of its complete versions, or fail; a copy that succeeds
// without it reports success with different data (CSI spec, CreateSnapshot
// and CreateVolume: a snapshot or clone is the source's data, and errors
// are reported, not hidden). In half the rounds a rename is made to land
// in the window between looking at f and opening it, each time, which is
// where the walk used to look again, three times, and then leave f out.
func TestWriteThenRenameIsNeverMissed(t *testing.T) {
	const rounds = 200
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte(version(0)), 0o644); err != nil {
		t.Fatal(err)
	}
	var w rewriter
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { w.run(src, stop) })
	defer func() { afterStat = nil }()

	var held, failed, missing, torn int
	for i := range rounds {
		afterStat = nil
		if i%2 == 1 {
			afterStat = func(name string) {
				if name == "f" {
					w.awaitRename()
				}
			}
		}
		data, err := copyOfF(t, src, i%4 < 2)
		switch {
		case err != nil:
			failed++
			t.Logf("round %d: the copy failed: %v", i, err)
		case data == nil:
			missing++
		case !whole(data):
			torn++
		default:
			held++
		}
	}
	close(stop)
	wg.Wait()
	if w.err != nil {
		t.Fatal(w.err)
	}
	t.Logf("%d renames over f during %d copies: %d hold a complete version, %d failed, %d miss f, %d hold a torn f",
		w.renames.Load(), rounds, held, failed, missing, torn)
	if missing > 0 || torn > 0 {
		t.Errorf("%d copies succeeded without f and %d with a torn f, want 0: f existed, whole, at every instant", missing, torn)
	}
}

// copyOfF archives src (or clones it) and returns what the copy holds as
// f, nil if it holds no f.
func copyOfF(t *testing.T, src string, snapshot bool) ([]byte, error) {
	if !snapshot {
		dst := filepath.Join(t.TempDir(), "dst")
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Clone(dst, src, nil); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(filepath.Join(dst, "f"))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return data, err
	}
	var archive bytes.Buffer
	if err := Archive(&archive, src, nil); err != nil {
		return nil, err
	}
	tr := tar.NewReader(&archive)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "f" {
			return io.ReadAll(tr)
		}
	}
}
