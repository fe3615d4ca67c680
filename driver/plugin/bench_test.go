package plugin_test

// Benchmarks for CreateVolume, CreateSnapshot and ListSnapshots at 1k and
// 10k existing objects, at concurrency 1 and 8, through a real gRPC client
// on the driver's unix socket, as a CO would call them. Every acknowledged
// write is durable: the store fsyncs each group commit. Run them with
// hack/bench.sh (make bench), which picks a fixed iteration count
// (-benchtime=Nx) per RPC and checks the targets.
//
// Each benchmark prepares one driver per object count, outside the timer,
// and shares it between its conc=1 and conc=8 runs. The create
// benchmarks delete what they created once the timer is stopped, so every
// run starts at exactly the advertised number of objects.

import (
	"context"
	"fmt"
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

func createVolumes(ctx context.Context, c csi.ControllerClient, conc, n int, prefix string) ([]string, error) {
	ids := make([][]string, conc)
	err := parallel(conc, n, func(w, i int) error {
		resp, err := c.CreateVolume(ctx, drivertest.VolumeRequest(fmt.Sprintf("%s-w%d-%d", prefix, w, i), 1<<30, nil))
		if err != nil {
			return err
		}
		ids[w] = append(ids[w], resp.GetVolume().GetVolumeId())
		return nil
	})
	var out []string
	for _, s := range ids {
		out = append(out, s...)
	}
	return out, err
}

func createSnapshots(ctx context.Context, c csi.ControllerClient, conc, n int, prefix string, sources []string) ([]string, error) {
	ids := make([][]string, conc)
	err := parallel(conc, n, func(w, i int) error {
		resp, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{
			Name:           fmt.Sprintf("%s-w%d-%d", prefix, w, i),
			SourceVolumeId: sources[(w*7919+i)%len(sources)],
		})
		if err != nil {
			return err
		}
		ids[w] = append(ids[w], resp.GetSnapshot().GetSnapshotId())
		return nil
	})
	var out []string
	for _, s := range ids {
		out = append(out, s...)
	}
	return out, err
}

func deleteVolumes(ctx context.Context, c csi.ControllerClient, ids []string) error {
	return parallel(benchPopulateConcurrency, len(ids), func(w, i int) error {
		_, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: ids[i*benchPopulateConcurrency+w]})
		return err
	})
}

func deleteSnapshots(ctx context.Context, c csi.ControllerClient, ids []string) error {
	return parallel(benchPopulateConcurrency, len(ids), func(w, i int) error {
		_, err := c.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: ids[i*benchPopulateConcurrency+w]})
		return err
	})
}

// populateSnapshots creates benchSourceVolumes volumes and n snapshots
// spread over them, and returns the volume IDs.
func populateSnapshots(b *testing.B, ctx context.Context, c csi.ControllerClient, n int) []string {
	b.Helper()
	start := time.Now()
	sources, err := createVolumes(ctx, c, benchPopulateConcurrency, benchSourceVolumes, "src")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := createSnapshots(ctx, c, benchPopulateConcurrency, n, "pre", sources); err != nil {
		b.Fatal(err)
	}
	b.Logf("prepopulated %d volumes and %d snapshots in %v", len(sources), n, time.Since(start).Round(time.Millisecond))
	return sources
}

// listAll pages through every snapshot and returns how many it saw and
// in how many pages.
func listAll(ctx context.Context, c csi.ControllerClient) (entries, pages int, err error) {
	token := ""
	for {
		resp, err := c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: benchPageSize, StartingToken: token})
		if err != nil {
			return entries, pages, err
		}
		pages++
		entries += len(resp.GetEntries())
		if token = resp.GetNextToken(); token == "" {
			return entries, pages, nil
		}
	}
}

// BenchmarkCreateVolume: one op is one CreateVolume of a new 1 GiB mount
// volume with N volumes already present.
func BenchmarkCreateVolume(b *testing.B) {
	for _, n := range benchObjects {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			ctx := context.Background()
			c := benchClient(b)
			start := time.Now()
			if _, err := createVolumes(ctx, c, benchPopulateConcurrency, n, "pre"); err != nil {
				b.Fatal(err)
			}
			b.Logf("prepopulated %d volumes in %v", n, time.Since(start).Round(time.Millisecond))
			for _, conc := range benchConcurrency {
				b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
					run := benchRun.Add(1)
					ids := make([][]string, conc)
					benchTimed(b, conc, func(w, i int) error {
						resp, err := c.CreateVolume(ctx, drivertest.VolumeRequest(fmt.Sprintf("bench-r%d-w%d-%d", run, w, i), 1<<30, nil))
						if err != nil {
							return err
						}
						ids[w] = append(ids[w], resp.GetVolume().GetVolumeId())
						return nil
					})
					var all []string
					for _, s := range ids {
						all = append(all, s...)
					}
					if err := deleteVolumes(ctx, c, all); err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}

// BenchmarkCreateSnapshot: one op is one CreateSnapshot of one of
// benchSourceVolumes volumes with N snapshots already present.
func BenchmarkCreateSnapshot(b *testing.B) {
	for _, n := range benchObjects {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			ctx := context.Background()
			c := benchClient(b)
			sources := populateSnapshots(b, ctx, c, n)
			for _, conc := range benchConcurrency {
				b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
					run := benchRun.Add(1)
					ids := make([][]string, conc)
					benchTimed(b, conc, func(w, i int) error {
						resp, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{
							Name:           fmt.Sprintf("bench-r%d-w%d-%d", run, w, i),
							SourceVolumeId: sources[(w*7919+i)%len(sources)],
						})
						if err != nil {
							return err
						}
						ids[w] = append(ids[w], resp.GetSnapshot().GetSnapshotId())
						return nil
					})
					var all []string
					for _, s := range ids {
						all = append(all, s...)
					}
					if err := deleteSnapshots(ctx, c, all); err != nil {
						b.Fatal(err)
					}
				})
			}
		})
	}
}

// BenchmarkListSnapshots: one op is one complete listing of the N
// snapshots, paging with max_entries=100 (N/100 ListSnapshots calls).
// ns/page is the elapsed time per page fetched, the cost of one
// ListSnapshots call that does not depend on N.
func BenchmarkListSnapshots(b *testing.B) {
	for _, n := range benchObjects {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			ctx := context.Background()
			c := benchClient(b)
			populateSnapshots(b, ctx, c, n)
			if got, _, err := listAll(ctx, c); err != nil || got != n {
				b.Fatalf("listing before the benchmark: %d snapshots, err %v; want %d", got, err, n)
			}
			for _, conc := range benchConcurrency {
				b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
					var pages atomic.Int64
					benchTimed(b, conc, func(w, i int) error {
						got, p, err := listAll(ctx, c)
						if err == nil && got != n {
							err = fmt.Errorf("complete listing returned %d snapshots, want %d", got, n)
						}
						pages.Add(int64(p))
						return err
					})
					b.ReportMetric(float64(pages.Load())/float64(b.N), "pages/op")
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pages.Load()), "ns/page")
				})
			}
		})
	}
}
