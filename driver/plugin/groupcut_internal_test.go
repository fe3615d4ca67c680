package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// TestValidatedCut: a tenant's change to a member after a group cut noted
// its time and flushed, before the copies, is seen, and the group is
// refused with ABORTED after cutAttempts tries, naming the member, with
// no data left behind; with no change, or only reads, the group is cut.
// CreateVolumeGroupSnapshot: "MUST give a write-order consistency
// guarantee or fail if that's not possible" (spec.md). The volumes are
// published read-write: writers are what a validated cut is for.
func TestValidatedCut(t *testing.T) {
	tests := []struct {
		name string
		// prepare runs before the cut; change runs after each try's flush.
		prepare func(t *testing.T, fs, block string) func()
		refused bool
	}{
		{"no change", func(*testing.T, string, string) func() { return func() {} }, false},
		{"a read", func(t *testing.T, fs, _ string) func() {
			return func() { os.ReadFile(filepath.Join(fs, "f")) }
		}, false},
		{"an append", func(t *testing.T, fs, _ string) func() {
			return func() { appendTo(t, filepath.Join(fs, "f")) }
		}, true},
		{"a new file", func(t *testing.T, fs, _ string) func() {
			n := 0
			return func() {
				n++
				if err := os.WriteFile(filepath.Join(fs, "new"+strings.Repeat("x", n)), nil, 0o644); err != nil {
					t.Error(err)
				}
			}
		}, true},
		{"a store through a mapping made writable before the cut", func(t *testing.T, fs, _ string) func() {
			mem := mapFile(t, filepath.Join(fs, "f"))
			mem[0] = 'A'
			time.Sleep(20 * time.Millisecond) // past the coarse tick of the first store
			return func() { mem[1]++ }
		}, true},
		{"a write to the block image", func(t *testing.T, _, block string) func() {
			return func() { appendTo(t, block) }
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newListPlugin(t)
			if p.cuts.quietOnly {
				t.Skipf("the data directory %s is on tmpfs, where zonepath refuses groups of members published read-write; set TMPDIR to a disk filesystem", p.cfg.DataDir)
			}
			ctx := context.Background()
			fsVol, blockVol := mustVolume(t, p, "fs"), mustVolumeOf(t, p, "block", blockCapability())
			for _, v := range []string{fsVol, blockVol} {
				if _, err := p.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v, NodeId: testNode, VolumeCapability: capabilityOf(p, v)}); err != nil {
					t.Fatal(err)
				}
			}
			fsDir, image := p.data.volumePath(fsVol, false), p.data.volumePath(blockVol, true)
			if err := os.WriteFile(filepath.Join(fsDir, "f"), make([]byte, 4096), 0o644); err != nil {
				t.Fatal(err)
			}
			afterCutFlush = tt.prepare(t, fsDir, image)
			t.Cleanup(func() { afterCutFlush = nil })
			_, err := p.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{fsVol, blockVol}})
			if !tt.refused {
				if err != nil {
					t.Errorf("group after %s: %v, want OK", tt.name, err)
				}
				return
			}
			if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "volume ") {
				t.Errorf("group after %s: %v, want ABORTED naming the volume", tt.name, err)
			}
			if left, _ := os.ReadDir(filepath.Join(p.data.root, "snapshots")); len(left) > 0 {
				t.Errorf("a refused group left snapshot data: %v", left)
			}
		})
	}
}

func appendTo(t *testing.T, path string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString("x"); err != nil {
		t.Error(err)
	}
}

// mapFile maps the first page of path shared and writable until the test ends.
func mapFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return mem
}

func blockCapability() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
}

func capabilityOf(p *Plugin, id string) *csi.VolumeCapability {
	if p.store.Volume(id).Block {
		return blockCapability()
	}
	return mountCapability()
}

// TestQuietCutOnTmpfs: where the data directory's filesystem hides stores
// through shared mappings, a group with a member published read-write is
// refused with FAILED_PRECONDITION ("Cannot snapshot multiple volumes
// together"), naming the volume and the node, and cut once it is
// unpublished.
func TestQuietCutOnTmpfs(t *testing.T) {
	p := newListPlugin(t)
	p.cuts.quietOnly = true
	ctx := context.Background()
	id := mustVolume(t, p, "quiet")
	if _, err := p.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: testNode, VolumeCapability: mountCapability()}); err != nil {
		t.Fatal(err)
	}
	req := &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{id}}
	_, err := p.CreateVolumeGroupSnapshot(ctx, req)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), testNode) {
		t.Errorf("group with a member published read-write on tmpfs: %v, want FAILED_PRECONDITION naming %s and %s", err, id, testNode)
	}
	if _, err := p.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: testNode}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.CreateVolumeGroupSnapshot(ctx, req); err != nil {
		t.Errorf("the refused group once its member is unpublished: %v", err)
	}
}

// TestPublishDuringCut: in the fallback for tmpfs, while a group snapshot
// holds a volume for its cut (holdForCut), a read-write
// ControllerPublishVolume of it is ABORTED, spec.md's "Operation pending
// for volume", and a read-only one, which lets no tenant write, goes
// ahead; once the cut is released the read-write publish succeeds, and a
// cut is then refused with FAILED_PRECONDITION naming the volume and the
// node.
func TestPublishDuringCut(t *testing.T) {
	p := newListPlugin(t)
	p.cuts.quietOnly = true
	ctx := context.Background()
	id := mustVolume(t, p, "cut")
	publish := func(readonly bool) error {
		_, err := p.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: testNode, VolumeCapability: mountCapability(), Readonly: readonly})
		return err
	}
	unpublish := func() {
		if _, err := p.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: testNode}); err != nil {
			t.Fatal(err)
		}
	}
	release, err := p.holdForCut([]*state.Volume{p.store.Volume(id)})
	if err != nil {
		t.Fatal(err)
	}
	if err := publish(false); status.Code(err) != codes.Aborted {
		t.Errorf("read-write publish during a cut: %v, want ABORTED", err)
	}
	if err := publish(true); err != nil {
		t.Errorf("read-only publish during a cut: %v, want OK", err)
	}
	unpublish()
	release()
	if err := publish(false); err != nil {
		t.Fatalf("read-write publish after the cut: %v", err)
	}
	_, err = p.holdForCut([]*state.Volume{p.store.Volume(id)})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), testNode) {
		t.Errorf("cut of a volume published read-write: %v, want FAILED_PRECONDITION naming %s and %s", err, id, testNode)
	}
	unpublish()
	if release, err := p.holdForCut([]*state.Volume{p.store.Volume(id)}); err != nil {
		t.Errorf("cut after unpublishing: %v", err)
	} else {
		release()
	}
}
