package plugin_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/datapath"
	"github.com/zonepath/zonepath/driver/drivertest"
)

// needValidatedCuts skips where the driver's data directory is on tmpfs:
// there it refuses groups of members published read-write instead of
// validating the cut (groupcut.go; TestQuietCutOnTmpfs covers that mode).
// A TMPDIR on a disk filesystem runs the test.
func needValidatedCuts(t *testing.T, d *groupDriver) {
	t.Helper()
	hides, err := datapath.HidesMappedStores(d.dataDir())
	if err != nil {
		t.Fatal(err)
	}
	if hides {
		t.Skipf("the data directory %s is on tmpfs, where zonepath refuses groups of members published read-write; set TMPDIR to a disk filesystem", d.dataDir())
	}
}

// seqLog is one global write order over the members: each write appends
// the next number to the next member's file, round-robin, and completes
// before the next one starts, so a write-order consistent group holds,
// across its members, exactly the numbers 1..k for some k.
type seqLog struct {
	mu    sync.Mutex
	next  int
	files []*os.File // one per member, open while the members are published
}

const seqFile = "seq"

// open opens each member's file in the volume directories, as a tenant
// writes them through its publish (the publish bind-mounts that
// directory).
func (l *seqLog) open(dirs []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, dir := range dirs {
		f, err := os.OpenFile(filepath.Join(dir, seqFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		l.files = append(l.files, f)
	}
	return nil
}

func (l *seqLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.files {
		f.Close()
	}
	l.files = nil
}

// write appends the next number to its member; false once closed.
func (l *seqLog) write() (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.files == nil {
		return false, nil
	}
	l.next++
	_, err := fmt.Fprintf(l.files[(l.next-1)%len(l.files)], "%d\n", l.next)
	return true, err
}

// writeOrderRun counts what TestGroupSnapshotWriteOrder did.
type writeOrderRun struct {
	attempted, accepted, refused atomic.Int64
	mu                           sync.Mutex
	groups                       []*csi.VolumeGroupSnapshot
	otherErrors                  []error
}

func (r *writeOrderRun) fail(err error) {
	r.mu.Lock()
	r.otherErrors = append(r.otherErrors, err)
	r.mu.Unlock()
}

// TestGroupSnapshotWriteOrder: writers append one global sequence of
// numbers round-robin to every member of a group, in bursts, while group
// snapshots are cut over and over. CreateVolumeGroupSnapshot "MUST give a
// write-order consistency guarantee or fail if that's not possible"
// (spec.md): each cut accepted, restored member by member, holds exactly
// the numbers 1..k across the group; a cut the writers raced on every try
// is refused with ABORTED (groupcut.go). The members stay published
// read-write throughout: bursts are longer than a cut's tries, so some
// cuts are refused, and the pauses between them are long enough for others
// to be accepted.
func TestGroupSnapshotWriteOrder(t *testing.T) {
	const members, writers, cycles = 3, 3, 8
	d := newGroupDriver(t, nil)
	needValidatedCuts(t, d)
	ctx := context.Background()
	info, err := d.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var vols, dirs []string
	for i := range members {
		v := d.mustCreateVolume(drivertest.VolumeRequest(fmt.Sprintf("order-%d", i), gib, &csi.TopologyRequirement{Requisite: []*csi.Topology{info.GetAccessibleTopology()}}))
		vols = append(vols, v.GetVolumeId())
		dirs = append(dirs, filepath.Join(d.dataDir(), "volumes", v.GetVolumeId()))
		if _, err := d.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: v.GetVolumeId(), NodeId: info.GetNodeId(), VolumeCapability: drivertest.MountCapability()}); err != nil {
			t.Fatal(err)
		}
	}
	run := &writeOrderRun{}
	log := &seqLog{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for range cycles {
			if err := writeBurst(dirs, log, writers); err != nil {
				run.fail(err)
				return
			}
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		cutUntil(ctx, d, vols, done, run)
	}()
	wg.Wait()
	for _, err := range run.otherErrors {
		t.Error(err)
	}
	violations := 0
	for i, g := range run.groups {
		violations += checkRestoredOrder(t, d, info.GetAccessibleTopology(), fmt.Sprintf("order-restore-%d", i), g)
	}
	t.Logf("writers %d, members %d, writes %d, cuts attempted %d, accepted %d, refused %d, restored groups checked %d, violations %d",
		writers, members, log.next, run.attempted.Load(), run.accepted.Load(), run.refused.Load(), len(run.groups), violations)
	if violations > 0 {
		t.Errorf("%d restored groups are not a prefix of the write order", violations)
	}
	if run.accepted.Load() == 0 || run.refused.Load() == 0 {
		t.Errorf("cuts accepted %d, refused %d: the run must exercise both", run.accepted.Load(), run.refused.Load())
	}
}

// writeBurst writes with several writers for longer than a group cut's
// tries take, stops them and stays quiet for a while.
func writeBurst(dirs []string, log *seqLog, writers int) error {
	if err := log.open(dirs); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ok, err := log.write()
				if err != nil {
					errs <- err
				}
				if !ok || err != nil {
					return
				}
				time.Sleep(100 * time.Microsecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	log.close()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	time.Sleep(150 * time.Millisecond)
	return nil
}

// cutUntil cuts group snapshots of vols until done is closed.
func cutUntil(ctx context.Context, d *groupDriver, vols []string, done <-chan struct{}, run *writeOrderRun) {
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		run.attempted.Add(1)
		g, err := d.createGroup(fmt.Sprintf("order-%d", i), vols, nil)
		switch {
		case err == nil:
			run.accepted.Add(1)
			run.mu.Lock()
			run.groups = append(run.groups, g)
			run.mu.Unlock()
		case codeOf(err) == codes.Aborted:
			run.refused.Add(1)
		default:
			run.fail(fmt.Errorf("cut %d: %v, want OK or ABORTED", i, err))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// checkRestoredOrder restores each member of g, reads the numbers the
// writers left in it and returns 1 if, across the group, they are not
// exactly 1..k (a member cut after writes another one missed), else 0.
// It deletes the restores and the group afterwards.
func checkRestoredOrder(t *testing.T, d *groupDriver, seg *csi.Topology, name string, g *csi.VolumeGroupSnapshot) int {
	t.Helper()
	ctx := context.Background()
	seen := map[int]bool{}
	top := 0
	for j, m := range g.GetSnapshots() {
		req := restoreRequest(fmt.Sprintf("%s-%d", name, j), m.GetSnapshotId())
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{seg}}
		v := d.mustCreateVolume(req)
		for _, n := range readSeq(t, filepath.Join(d.dataDir(), "volumes", v.GetVolumeId(), seqFile)) {
			if seen[n] {
				t.Errorf("group %s: %d twice", g.GetGroupSnapshotId(), n)
			}
			seen[n], top = true, max(top, n)
		}
		if _, err := d.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()}); err != nil {
		t.Fatal(err)
	}
	if len(seen) == top {
		return 0
	}
	var missing []int
	for n := 1; n <= top && len(missing) < 5; n++ {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	t.Logf("group %s holds %d numbers up to %d; missing %v...", g.GetGroupSnapshotId(), len(seen), top, missing)
	return 1
}

// readSeq reads the numbers of a member's file; a missing file is none
// (cut before the first write), and a last line without its newline is a
// write the cut caught half done, which a crash-consistent copy may hold.
func readSeq(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []int
	for _, l := range lines[:len(lines)-1] {
		n, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("%s: line %q", path, l)
		}
		out = append(out, n)
	}
	return out
}

// TestGroupSnapshotPublishedMembers: a group is cut whether its members
// are unpublished, published read-only or published read-write: what
// decides is whether a member changed during the cut (groupcut.go), not
// who could write it.
func TestGroupSnapshotPublishedMembers(t *testing.T) {
	d := newGroupDriver(t, nil)
	needValidatedCuts(t, d)
	ctx := context.Background()
	vols := d.volumesIn(t, "pub", "zone-a", "zone-a")
	publish := func(vol string, readonly bool) {
		t.Helper()
		if _, err := d.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: drivertest.NodeID, VolumeCapability: drivertest.MountCapability(), Readonly: readonly}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.createGroup("unpublished", vols, nil); err != nil {
		t.Errorf("group of unpublished volumes: %v", err)
	}
	publish(vols[0], true)
	if _, err := d.createGroup("read-only", vols, nil); err != nil {
		t.Errorf("group with a member published read-only: %v", err)
	}
	publish(vols[1], false)
	if _, err := d.createGroup("read-write", vols, nil); err != nil {
		t.Errorf("group with a member published read-write and not written: %v", err)
	}
}
