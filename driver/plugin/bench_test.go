package plugin_test

// Benchmarks for CreateVolume, CreateSnapshot, ListVolumes and
// ListSnapshots at 1k and 10k existing objects, at concurrency 1 and 8,
// through a real gRPC client on the driver's unix socket, as a CO would
// call them. Every acknowledged write is durable: the store fsyncs each
// group commit. They run the driver in-process, to profile its side
// (go test -cpuprofile; driver/README.md, "Performance"); make bench
// measures and checks the driver as a process.
//
// Each benchmark prepares one driver per object count, outside the timer,
// and shares it between its conc=1 and conc=8 runs. The create
// benchmarks delete what they created once the timer is stopped, so every
// run starts at exactly the advertised number of objects.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

var (
	benchObjects     = []int{1000, 10000}
	benchConcurrency = []int{1, 8}
)

const (
	// benchSourceVolumes is how many volumes the snapshots are spread over.
	benchSourceVolumes = 100
	// benchPopulateConcurrency is how many clients prepopulate the driver
	// and delete what a create benchmark made: more than 8 makes larger
	// group commits, so 10k snapshots take a few seconds.
	benchPopulateConcurrency = 32
	// benchPageSize is max_entries of every ListSnapshots page.
	benchPageSize = 100
)

// benchRun makes names unique across every run of every benchmark.
var benchRun atomic.Int64

// benchClient serves a driver and connects to it like a CO: one
// connection shared by every concurrent caller.
func benchClient(b *testing.B) csi.ControllerClient {
	b.Helper()
	plugin.ApplyRuntimeDefaults() // the GC target bin/zonepath runs with
	return csi.NewControllerClient(drivertest.Start(b, drivertest.Options{}).Conn(b))
}

// parallel runs op(worker, i) for i in [0, n), split over conc goroutines,
// and returns the first error.
func parallel(conc, n int, op func(worker, i int) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for w := range conc {
		share := n / conc
		if w < n%conc {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range share {
				if err := op(w, i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// benchTimed runs b.N ops over conc goroutines with the timer running
// only around them, stops the timer and reports ops/s.
func benchTimed(b *testing.B, conc int, op func(worker, i int) error) {
	b.Helper()
	b.ResetTimer()
	b.StartTimer()
	err := parallel(conc, b.N, op)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// A creator makes one object on worker w's ith call and returns its ID.
type creator func(w, i int) (string, error)

func volumeCreator(ctx context.Context, c csi.ControllerClient, prefix string) creator {
	return func(w, i int) (string, error) {
		resp, err := c.CreateVolume(ctx, drivertest.VolumeRequest(fmt.Sprintf("%s-w%d-%d", prefix, w, i), 1<<30, nil))
		return resp.GetVolume().GetVolumeId(), err
	}
}

// snapshotCreator spreads the snapshots over the source volumes.
func snapshotCreator(ctx context.Context, c csi.ControllerClient, prefix string, sources []string) creator {
	return func(w, i int) (string, error) {
		resp, err := c.CreateSnapshot(ctx, drivertest.SnapshotRequest(fmt.Sprintf("%s-w%d-%d", prefix, w, i), sources[(w*7919+i)%len(sources)], nil))
		return resp.GetSnapshot().GetSnapshotId(), err
	}
}

// createAll runs n creates over conc goroutines and returns the IDs made,
// also those made before an error stopped it.
func createAll(conc, n int, create creator) ([]string, error) {
	ids := make(idsByWorker, conc)
	err := parallel(conc, n, ids.collect(create))
	return ids.all(), err
}

// idsByWorker keeps the IDs each worker made, one slice per worker so
// that no lock is needed.
type idsByWorker [][]string

func (ids idsByWorker) collect(create creator) func(w, i int) error {
	return func(w, i int) error {
		id, err := create(w, i)
		if err == nil {
			ids[w] = append(ids[w], id)
		}
		return err
	}
}

func (ids idsByWorker) all() []string { return slices.Concat(ids...) }

// deleteAll deletes every ID with del, benchPopulateConcurrency at a time.
func deleteAll(ids []string, del func(id string) error) error {
	return parallel(benchPopulateConcurrency, len(ids), func(w, i int) error {
		return del(ids[i*benchPopulateConcurrency+w])
	})
}

// benchCreates times b.N creates over conc goroutines, named apart from
// every other run's, then deletes what they made.
func benchCreates(b *testing.B, conc int, newCreator func(prefix string) creator, del func(id string) error) {
	b.Helper()
	ids := make(idsByWorker, conc)
	benchTimed(b, conc, ids.collect(newCreator(fmt.Sprintf("bench-r%d", benchRun.Add(1)))))
	if err := deleteAll(ids.all(), del); err != nil {
		b.Fatal(err)
	}
}

// populateSnapshots creates benchSourceVolumes volumes and n snapshots
// spread over them, and returns the volume IDs.
func populateSnapshots(b *testing.B, ctx context.Context, c csi.ControllerClient, n int) []string {
	b.Helper()
	start := time.Now()
	sources, err := createAll(benchPopulateConcurrency, benchSourceVolumes, volumeCreator(ctx, c, "src"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := createAll(benchPopulateConcurrency, n, snapshotCreator(ctx, c, "pre", sources)); err != nil {
		b.Fatal(err)
	}
	b.Logf("prepopulated %d volumes and %d snapshots in %v", len(sources), n, time.Since(start).Round(time.Millisecond))
	return sources
}

// A lister fetches one page of snapshots or volumes: its entries and the
// next token.
type lister func(ctx context.Context, c csi.ControllerClient, token string) (int, string, error)

func snapshotPage(ctx context.Context, c csi.ControllerClient, token string) (int, string, error) {
	resp, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: benchPageSize, StartingToken: token})
	return len(resp.GetEntries()), resp.GetNextToken(), err
}

func volumePage(ctx context.Context, c csi.ControllerClient, token string) (int, string, error) {
	resp, err := c.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: benchPageSize, StartingToken: token})
	return len(resp.GetEntries()), resp.GetNextToken(), err
}

// listAll pages through every snapshot or volume and returns how many it
// saw and in how many pages.
func listAll(ctx context.Context, c csi.ControllerClient, page lister) (entries, pages int, err error) {
	token := ""
	for {
		n, next, err := page(ctx, c, token)
		if err != nil {
			return entries, pages, err
		}
		pages++
		entries += n
		if token = next; token == "" {
			return entries, pages, nil
		}
	}
}

// benchMatrix runs a benchmark for every N of benchObjects and every
// concurrency of benchConcurrency: setup fills a fresh driver with N
// objects, once per N, and returns the timed part.
func benchMatrix(b *testing.B, setup func(b *testing.B, ctx context.Context, c csi.ControllerClient, n int) func(b *testing.B, conc int)) {
	for _, n := range benchObjects {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			ctx := context.Background()
			timed := setup(b, ctx, benchClient(b), n)
			for _, conc := range benchConcurrency {
				b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) { timed(b, conc) })
			}
		})
	}
}

// BenchmarkCreateVolume: one op is one CreateVolume of a new 1 GiB mount
// volume with N volumes already present.
func BenchmarkCreateVolume(b *testing.B) {
	benchMatrix(b, func(b *testing.B, ctx context.Context, c csi.ControllerClient, n int) func(*testing.B, int) {
		start := time.Now()
		if _, err := createAll(benchPopulateConcurrency, n, volumeCreator(ctx, c, "pre")); err != nil {
			b.Fatal(err)
		}
		b.Logf("prepopulated %d volumes in %v", n, time.Since(start).Round(time.Millisecond))
		return func(b *testing.B, conc int) {
			benchCreates(b, conc, func(prefix string) creator { return volumeCreator(ctx, c, prefix) }, func(id string) error {
				_, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
				return err
			})
		}
	})
}

// BenchmarkCreateSnapshot: one op is one CreateSnapshot of one of
// benchSourceVolumes volumes with N snapshots already present.
func BenchmarkCreateSnapshot(b *testing.B) {
	benchMatrix(b, func(b *testing.B, ctx context.Context, c csi.ControllerClient, n int) func(*testing.B, int) {
		sources := populateSnapshots(b, ctx, c, n)
		return func(b *testing.B, conc int) {
			benchCreates(b, conc, func(prefix string) creator { return snapshotCreator(ctx, c, prefix, sources) }, func(id string) error {
				_, err := c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id})
				return err
			})
		}
	})
}

// BenchmarkListSnapshots: one op is one complete listing of the N
// snapshots, paging with max_entries=100 (N/100 ListSnapshots calls).
// ns/page is the elapsed time per page fetched, the cost of one
// ListSnapshots call that does not depend on N.
func BenchmarkListSnapshots(b *testing.B) {
	benchMatrix(b, func(b *testing.B, ctx context.Context, c csi.ControllerClient, n int) func(*testing.B, int) {
		populateSnapshots(b, ctx, c, n)
		return benchListing(b, ctx, c, n, snapshotPage)
	})
}

// BenchmarkListVolumes is BenchmarkListSnapshots for N volumes (plus the
// snapshots' benchSourceVolumes).
func BenchmarkListVolumes(b *testing.B) {
	benchMatrix(b, func(b *testing.B, ctx context.Context, c csi.ControllerClient, n int) func(*testing.B, int) {
		if _, err := createAll(benchPopulateConcurrency, n, volumeCreator(ctx, c, "pre")); err != nil {
			b.Fatal(err)
		}
		return benchListing(b, ctx, c, n, volumePage)
	})
}

// benchListing checks a complete listing holds n entries and returns the
// timed part: complete listings.
func benchListing(b *testing.B, ctx context.Context, c csi.ControllerClient, n int, page lister) func(*testing.B, int) {
	if got, _, err := listAll(ctx, c, page); err != nil || got != n {
		b.Fatalf("listing before the benchmark: %d entries, err %v; want %d", got, err, n)
	}
	return func(b *testing.B, conc int) {
		var pages atomic.Int64
		benchTimed(b, conc, func(w, i int) error {
			got, p, err := listAll(ctx, c, page)
			if err == nil && got != n {
				err = fmt.Errorf("complete listing returned %d entries, want %d", got, n)
			}
			pages.Add(int64(p))
			return err
		})
		b.ReportMetric(float64(pages.Load())/float64(b.N), "pages/op")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pages.Load()), "ns/page")
	}
}
