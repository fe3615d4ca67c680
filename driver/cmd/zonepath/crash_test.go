package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/zonepath/zonepath/driver/drivertest"
)

// TestSIGKILLUnderLoad kills the driver with SIGKILL at a random moment
// while concurrent clients create, snapshot, restore and delete, restarts
// it on the same state directory, and checks after every round:
//   - every acknowledged object is there and every acknowledged deletion
//     stays deleted (an operation cut off by the kill may go either way);
//   - every record has its data, and no data file lacks a record (the
//     orphans a crash leaves between data and record are reclaimed at
//     start-up);
//   - no temporary file is left.
//
// ZONEPATH_SIGKILL_ROUNDS sets the rounds (default 12, about half a second each);
// ZONEPATH_SIGKILL_SEED replays a run.
func TestSIGKILLUnderLoad(t *testing.T) {
	bin := driverBinary(t)
	rounds := envInt(t, "ZONEPATH_SIGKILL_ROUNDS", 12)
	seed := uint64(envInt(t, "ZONEPATH_SIGKILL_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (ZONEPATH_SIGKILL_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	const clients = 8

	dir := t.TempDir()
	data := filepath.Join(dir, "state", "data")
	w := newCrashWorld()
	var total crashFigures
	d := startDriver(t, bin, dir)
	for round := 0; round < rounds; round++ {
		l := w.startLoad(t, d.ctrl, data, clients, round, rng.Uint64())
		time.Sleep(time.Duration(50+rng.IntN(450)) * time.Millisecond)
		l.killed.Store(true)
		d.kill(t)
		l.cancel()
		l.wg.Wait()
		w.merge(l)
		total.add(l.figures)
		total[figLeftAtKill] += w.leftovers(t, data)

		d = startDriver(t, bin, dir)
		total.add(w.check(t, d.ctrl, data, round))
	}
	d.conn.Close()
	if total.acked() == 0 {
		t.Error("no operation was acknowledged: the load never ran")
	}
	t.Logf("SIGKILL test: %d rounds, %d clients; %d acknowledged operations (CreateVolume %d, restore %d, CreateSnapshot %d, DeleteVolume %d, DeleteSnapshot %d), %d cut off by the kill",
		rounds, clients, total.acked(), total[figCreateVolume], total[figRestore], total[figCreateSnapshot], total[figDeleteVolume], total[figDeleteSnapshot], total[figCutOff])
	t.Logf("at the kills: %d data or temporary files of unacknowledged or deleted objects; after restart: %d acknowledged records lost, %d deletions undone, %d orphans, %d temporary files, %d records without data",
		total[figLeftAtKill], total[figLost], total[figUndeleted], total[figOrphans], total[figTemps], total[figWithoutData])
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative number", name, v)
	}
	return n
}

// The counts the test reports, indexes of crashFigures.
const (
	figCreateVolume = iota
	figRestore
	figCreateSnapshot
	figDeleteVolume
	figDeleteSnapshot
	figCutOff     // operations the kill cut off
	figLeftAtKill // files no acknowledged object accounts for, at a kill
	figLost
	figUndeleted
	figOrphans
	figTemps
	figWithoutData
	numFigures
)

type crashFigures [numFigures]int

func (f *crashFigures) acked() int {
	return f[figCreateVolume] + f[figRestore] + f[figCreateSnapshot] + f[figDeleteVolume] + f[figDeleteSnapshot]
}

func (f *crashFigures) add(o crashFigures) {
	for i := range f {
		f[i] += o[i]
	}
}

// crashWorld is what the driver acknowledged: objects (ID -> block) that
// must survive, deletions that must stay, and the objects whose last
// operation the kill cut off, which may go either way.
type crashWorld struct {
	volumes, snapshots         map[string]bool
	goneVolumes, goneSnapshots map[string]bool
	uncertain                  map[string]bool
	// reported holds the files already counted as orphans or temporary
	// files, so a leftover no restart removes is counted once.
	reported map[string]bool
	// seenAtKill holds the files leftovers already counted.
	seenAtKill map[string]bool
}

func newCrashWorld() *crashWorld {
	return &crashWorld{volumes: map[string]bool{}, snapshots: map[string]bool{},
		goneVolumes: map[string]bool{}, goneSnapshots: map[string]bool{}, uncertain: map[string]bool{}, reported: map[string]bool{}, seenAtKill: map[string]bool{}}
}

// crashLoad is one round of concurrent clients.
type crashLoad struct {
	clients []*crashClient
	killed  atomic.Bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	figures crashFigures
}

// crashClient owns a share of the world's objects, so that no two
// clients race on one object and its model stays exact.
type crashClient struct {
	t         *testing.T
	ctrl      csi.ControllerClient
	data      string
	name      string
	rng       *rand.Rand
	volumes   map[string]bool
	snapshots map[string]bool
	gone      []string // acknowledged deletions of this round
	uncertain string   // the object of the operation the kill cut off
	figures   crashFigures
	seq       int
}

func (w *crashWorld) startLoad(t *testing.T, ctrl csi.ControllerClient, data string, n, round int, seed uint64) *crashLoad {
	ctx, cancel := context.WithCancel(context.Background())
	l := &crashLoad{cancel: cancel}
	for i := 0; i < n; i++ {
		l.clients = append(l.clients, &crashClient{t: t, ctrl: ctrl, data: data, name: fmt.Sprintf("r%d-c%d", round, i),
			rng: rand.New(rand.NewPCG(seed, uint64(i))), volumes: map[string]bool{}, snapshots: map[string]bool{}})
	}
	deal := func(objects map[string]bool, share func(c *crashClient) map[string]bool) {
		i := 0
		for id, block := range objects {
			share(l.clients[i%n])[id] = block
			i++
		}
	}
	deal(w.volumes, func(c *crashClient) map[string]bool { return c.volumes })
	deal(w.snapshots, func(c *crashClient) map[string]bool { return c.snapshots })
	for _, c := range l.clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c.run(ctx, &l.killed)
		}()
	}
	return l
}

// merge takes the clients' acknowledged outcomes into the world.
func (w *crashWorld) merge(l *crashLoad) {
	w.volumes, w.snapshots = map[string]bool{}, map[string]bool{}
	for _, c := range l.clients {
		for id, block := range c.volumes {
			w.volumes[id] = block
		}
		for id, block := range c.snapshots {
			w.snapshots[id] = block
		}
		for _, id := range c.gone {
			if strings.HasPrefix(id, "zpv-") {
				w.goneVolumes[id] = true
			} else {
				w.goneSnapshots[id] = true
			}
		}
		if c.uncertain != "" {
			w.uncertain[c.uncertain] = true
		}
		l.figures.add(c.figures)
	}
}

// run sends operations until one fails. A failure after the kill is the
// kill's doing; one before it is a driver error.
func (c *crashClient) run(ctx context.Context, killed *atomic.Bool) {
	for {
		err := c.step(ctx)
		if err == nil {
			continue
		}
		if !killed.Load() {
			c.t.Errorf("client %s: operation failed before the kill: %v", c.name, err)
		}
		c.figures[figCutOff]++
		return
	}
}

func (c *crashClient) step(ctx context.Context) error {
	switch n := c.rng.IntN(10); {
	case n < 3 || len(c.volumes) == 0:
		return c.createVolume(ctx, c.rng.IntN(3) == 0, "")
	case n < 5:
		return c.createSnapshot(ctx, pick(c.rng, c.volumes))
	case n < 7 && len(c.snapshots) > 0:
		snap := pick(c.rng, c.snapshots)
		return c.createVolume(ctx, c.snapshots[snap], snap)
	case n < 8:
		return c.delete(ctx, pick(c.rng, c.volumes))
	case len(c.snapshots) > 0:
		return c.delete(ctx, pick(c.rng, c.snapshots))
	}
	return c.createVolume(ctx, false, "")
}

// pick chooses one of m's keys with rng. The keys are sorted first: map
// order is random, and a seed must replay the same run.
func pick(rng *rand.Rand, m map[string]bool) string {
	ids := slices.Sorted(maps.Keys(m))
	return ids[rng.IntN(len(ids))]
}

const crashVolumeSize = 1 << 20

func (c *crashClient) createVolume(ctx context.Context, block bool, fromSnapshot string) error {
	c.seq++
	req := drivertest.VolumeRequest(fmt.Sprintf("%s-v%d", c.name, c.seq), crashVolumeSize, nil)
	req.VolumeCapabilities = []*csi.VolumeCapability{drivertest.Capability(block)}
	if fromSnapshot != "" {
		req.VolumeContentSource = drivertest.FromSnapshot(fromSnapshot)
	}
	resp, err := c.ctrl.CreateVolume(ctx, req)
	if err != nil {
		return err
	}
	id := resp.GetVolume().GetVolumeId()
	c.volumes[id] = block
	if fromSnapshot != "" {
		c.figures[figRestore]++
		return nil
	}
	c.figures[figCreateVolume]++
	// Give the volume content, as a pod would, so snapshots and
	// restores have files to copy.
	path := filepath.Join(c.data, "volumes", id, "data")
	if block {
		path = filepath.Join(c.data, "volumes", id+".img")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteAt([]byte("written by "+req.Name), 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (c *crashClient) createSnapshot(ctx context.Context, volume string) error {
	c.seq++
	resp, err := c.ctrl.CreateSnapshot(ctx, drivertest.SnapshotRequest(fmt.Sprintf("%s-s%d", c.name, c.seq), volume, nil))
	if err != nil {
		return err
	}
	c.snapshots[resp.GetSnapshot().GetSnapshotId()] = c.volumes[volume]
	c.figures[figCreateSnapshot]++
	return nil
}

func (c *crashClient) delete(ctx context.Context, id string) error {
	c.uncertain = id
	var err error
	if _, isVolume := c.volumes[id]; isVolume {
		if _, err = c.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err == nil {
			delete(c.volumes, id)
			c.figures[figDeleteVolume]++
		}
	} else {
		if _, err = c.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id}); err == nil {
			delete(c.snapshots, id)
			c.figures[figDeleteSnapshot]++
		}
	}
	if err != nil {
		return err
	}
	c.uncertain = ""
	c.gone = append(c.gone, id)
	return nil
}

// dataFiles is what the data directory holds: volume and snapshot IDs
// (-> block) and temporary files.
type dataFiles struct {
	volumes, snapshots map[string]bool
	temps              []string
}

func scanData(t *testing.T, root string) dataFiles {
	t.Helper()
	files := dataFiles{volumes: map[string]bool{}, snapshots: map[string]bool{}}
	for kind, ids := range map[string]map[string]bool{"volumes": files.volumes, "snapshots": files.snapshots} {
		entries, err := os.ReadDir(filepath.Join(root, kind))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			switch ext := filepath.Ext(name); ext {
			case ".tmp":
				files.temps = append(files.temps, filepath.Join(kind, name))
			case ".img", ".tar":
				ids[strings.TrimSuffix(name, ext)] = ext == ".img"
			default:
				ids[name] = false
			}
		}
	}
	return files
}

// leftovers counts, with the driver dead, the files no acknowledged
// object accounts for: the crash's leftovers the restart must settle.
func (w *crashWorld) leftovers(t *testing.T, data string) int {
	files := scanData(t, data)
	n := 0
	count := func(file string) {
		if !w.seenAtKill[file] {
			w.seenAtKill[file] = true
			n++
		}
	}
	for _, tmp := range files.temps {
		count(tmp)
	}
	for id := range files.volumes {
		if _, ok := w.volumes[id]; !ok {
			count(id)
		}
	}
	for id := range files.snapshots {
		if _, ok := w.snapshots[id]; !ok {
			count(id)
		}
	}
	return n
}

// check compares the restarted driver with the world and the data
// directory, then adopts what the driver holds, settling the operations
// the kill cut off.
func (w *crashWorld) check(t *testing.T, ctrl csi.ControllerClient, data string, round int) crashFigures {
	t.Helper()
	ctx := context.Background()
	vols, err := ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	listedVolumes, listedSnapshots := map[string]bool{}, map[string]bool{}
	for _, e := range vols.GetEntries() {
		listedVolumes[e.GetVolume().GetVolumeId()] = true
	}
	for _, e := range snaps.GetEntries() {
		listedSnapshots[e.GetSnapshot().GetSnapshotId()] = true
	}
	files := scanData(t, data)
	var f crashFigures
	failures := 0
	report := func(count *int, format string, args ...any) {
		*count++
		if failures++; failures <= 5 {
			t.Errorf("round %d: "+format, append([]any{round}, args...)...)
		}
	}
	leftover := func(count *int, file, format string, args ...any) {
		if !w.reported[file] {
			w.reported[file] = true
			report(count, format, args...)
		}
	}
	for _, kind := range []struct {
		name                string
		acked, gone, listed map[string]bool
		files               map[string]bool
	}{
		{"volume", w.volumes, w.goneVolumes, listedVolumes, files.volumes},
		{"snapshot", w.snapshots, w.goneSnapshots, listedSnapshots, files.snapshots},
	} {
		for id := range kind.acked {
			if !kind.listed[id] && !w.uncertain[id] {
				report(&f[figLost], "acknowledged %s %s is gone after the restart", kind.name, id)
			}
		}
		for id := range kind.gone {
			if kind.listed[id] {
				report(&f[figUndeleted], "%s %s, whose deletion was acknowledged, is back after the restart", kind.name, id)
			}
		}
		for id := range kind.listed {
			if _, ok := kind.files[id]; !ok {
				report(&f[figWithoutData], "%s %s has a record but no data", kind.name, id)
			}
		}
		for id := range kind.files {
			if !kind.listed[id] {
				leftover(&f[figOrphans], id, "orphan: data of %s %s, which has no record", kind.name, id)
			}
		}
	}
	for _, tmp := range files.temps {
		leftover(&f[figTemps], tmp, "temporary file %s left after the restart", tmp)
	}
	if failures > 5 {
		t.Errorf("round %d: %d more failures", round, failures-5)
	}
	w.volumes, w.snapshots, w.uncertain = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for id := range listedVolumes {
		w.volumes[id] = files.volumes[id]
	}
	for id := range listedSnapshots {
		w.snapshots[id] = files.snapshots[id]
	}
	return f
}
