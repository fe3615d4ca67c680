package csibench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/drivertest"
)

// A call is worker w's ith operation.
type call func(ctx context.Context, w, i int) error

// sample is what one timed run measured.
type sample struct {
	ops     int
	elapsed time.Duration
	// cpu is the driver process's CPU time during the run.
	cpu time.Duration
	lat []time.Duration
	// rates holds ops/s of each round added.
	rates []float64
}

func (s *sample) add(o sample) {
	s.ops += o.ops
	s.elapsed += o.elapsed
	s.cpu += o.cpu
	s.lat = append(s.lat, o.lat...)
	s.rates = append(s.rates, float64(o.ops)/o.elapsed.Seconds())
}

// timed runs conc workers, each calling until more(w, i) is false, and
// measures every call. It stops at the first error.
func timed(ctx context.Context, p *process, conc int, more func(w, i int) bool, c call) (sample, error) {
	lats := make([][]time.Duration, conc)
	errs := make([]error, conc)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cpu0, start := p.cpu(), time.Now()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; more(w, i); i++ {
				t := time.Now()
				if err := c(ctx, w, i); err != nil {
					errs[w] = err
					cancel()
					return
				}
				lats[w] = append(lats[w], time.Since(t))
			}
		}()
	}
	wg.Wait()
	s := sample{elapsed: time.Since(start), cpu: p.cpu() - cpu0, lat: slices.Concat(lats...)}
	s.ops = len(s.lat)
	for _, err := range errs {
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// count makes n calls in all, split over conc workers.
func count(conc, n int) func(w, i int) bool {
	return func(w, i int) bool { return i < n/conc+btoi(w < n%conc) }
}

// until calls until d has passed, and at least once per worker.
func until(d time.Duration) func(w, i int) bool {
	end := time.Now().Add(d)
	return func(w, i int) bool { return i == 0 || time.Now().Before(end) }
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// idsByWorker collects the IDs each worker made, without a lock.
type idsByWorker [][]string

func (ids idsByWorker) all() []string { return slices.Concat(ids...) }

// creates is a call creating volumes (sources nil) or snapshots of
// sources, named by prefix, that keeps the IDs made in ids.
func creates(ctrl csi.ControllerClient, prefix string, sources []string, ids idsByWorker) call {
	return func(ctx context.Context, w, i int) error {
		name := fmt.Sprintf("%s-w%d-%d", prefix, w, i)
		var id string
		if sources == nil {
			resp, err := ctrl.CreateVolume(ctx, drivertest.VolumeRequest(name, 1<<30, nil))
			if err != nil {
				return err
			}
			id = resp.GetVolume().GetVolumeId()
		} else {
			resp, err := ctrl.CreateSnapshot(ctx, drivertest.SnapshotRequest(name, sources[(w*7919+i)%len(sources)], nil))
			if err != nil {
				return err
			}
			id = resp.GetSnapshot().GetSnapshotId()
		}
		ids[w] = append(ids[w], id)
		return nil
	}
}

// deletes is a call deleting worker w's ith ID, volumes or snapshots.
func deletes(ctrl csi.ControllerClient, snapshots bool, ids idsByWorker) call {
	return func(ctx context.Context, w, i int) error {
		id := ids[w][i]
		var err error
		if snapshots {
			_, err = ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id})
		} else {
			_, err = ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id})
		}
		return err
	}
}

// listing is what a complete paged listing returned.
type listing struct {
	entries, pages int
	// bytes is the encoded size of the pages, when asked for.
	bytes int
}

// listAll pages through every volume (snapshots false) or snapshot, pages
// of pageSize, decoding every entry as a CO does. Only withSize adds up
// the bytes: sizing a page is client work that a timed listing must not
// include (bench/README.md, "What the client costs").
func listAll(ctx context.Context, ctrl csi.ControllerClient, snapshots, withSize bool) (listing, error) {
	var l listing
	token := ""
	for {
		var resp interface {
			proto.Message
			GetNextToken() string
		}
		var err error
		if snapshots {
			resp, err = ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{MaxEntries: pageSize, StartingToken: token})
		} else {
			resp, err = ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: pageSize, StartingToken: token})
		}
		if err != nil {
			return l, err
		}
		l.pages++
		l.entries += entries(resp)
		if withSize {
			l.bytes += proto.Size(resp)
		}
		if token = resp.GetNextToken(); token == "" {
			return l, nil
		}
	}
}

func entries(m proto.Message) int {
	switch r := m.(type) {
	case *csi.ListVolumesResponse:
		return len(r.GetEntries())
	case *csi.ListSnapshotsResponse:
		return len(r.GetEntries())
	}
	return 0
}

// lists is a call making one complete listing that must hold want entries.
func lists(ctrl csi.ControllerClient, snapshots bool, want int) call {
	return func(ctx context.Context, _, _ int) error {
		l, err := listAll(ctx, ctrl, snapshots, false)
		if err == nil && l.entries != want {
			err = fmt.Errorf("complete listing returned %d entries, want %d", l.entries, want)
		}
		return err
	}
}
