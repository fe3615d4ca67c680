package chaos

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/util/wait"
)

// driver lists the backend: the zonepath controller's volumes and
// snapshots over its CSI socket, the driver's own answer to "what
// exists", independent of the API objects.
type driver struct {
	conn *grpc.ClientConn
	c    csi.ControllerClient
}

func dialDriver(socket string) (*driver, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &driver{conn: conn, c: csi.NewControllerClient(conn)}, nil
}

func (d *driver) close() { _ = d.conn.Close() }

// listTimeout bounds one listing, retries included: the controller may
// be down for a restart meanwhile.
const listTimeout = time.Minute

// list reads every volume and snapshot, retrying while the controller
// is being restarted.
func (d *driver) list(ctx context.Context) (Backend, error) {
	var b Backend
	err := retry(ctx, func(ctx context.Context) error {
		vols, err := d.volumes(ctx)
		if err != nil {
			return err
		}
		snaps, err := d.snapshots(ctx, "")
		b = Backend{Volumes: vols, Snapshots: snaps}
		return err
	})
	return b, err
}

// snapshotsOf lists the snapshots of one source volume.
func (d *driver) snapshotsOf(ctx context.Context, volume string) ([]BackendSnapshot, error) {
	var out []BackendSnapshot
	err := retry(ctx, func(ctx context.Context) (err error) {
		out, err = d.snapshots(ctx, volume)
		return err
	})
	return out, err
}

// volumesFrom lists the volumes restored from one snapshot.
func (d *driver) volumesFrom(ctx context.Context, snapshot string) ([]BackendVolume, error) {
	var out []BackendVolume
	err := retry(ctx, func(ctx context.Context) error {
		all, err := d.volumes(ctx)
		out = out[:0]
		for _, v := range all {
			if v.SourceSnapshot == snapshot {
				out = append(out, v)
			}
		}
		return err
	})
	return out, err
}

func retry(ctx context.Context, f func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, listTimeout, true, func(ctx context.Context) (bool, error) {
		callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		last = f(callCtx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

func (d *driver) volumes(ctx context.Context) ([]BackendVolume, error) {
	var out []BackendVolume
	token := ""
	for {
		resp, err := d.c.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetEntries() {
			v := e.GetVolume()
			bv := BackendVolume{ID: v.GetVolumeId(),
				SourceSnapshot: v.GetContentSource().GetSnapshot().GetSnapshotId(),
				SourceVolume:   v.GetContentSource().GetVolume().GetVolumeId()}
			if t := v.GetAccessibleTopology(); len(t) > 0 {
				bv.Segment = t[0].GetSegments()
			}
			out = append(out, bv)
		}
		if token = resp.GetNextToken(); token == "" {
			return out, nil
		}
	}
}

func (d *driver) snapshots(ctx context.Context, volume string) ([]BackendSnapshot, error) {
	var out []BackendSnapshot
	token := ""
	for {
		resp, err := d.c.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SourceVolumeId: volume, StartingToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetEntries() {
			s := e.GetSnapshot()
			bs := BackendSnapshot{ID: s.GetSnapshotId(), SourceVolume: s.GetSourceVolumeId()}
			for _, t := range s.GetAccessibleTopology() {
				bs.Segments = append(bs.Segments, t.GetSegments())
			}
			out = append(out, bs)
		}
		if token = resp.GetNextToken(); token == "" {
			return out, nil
		}
	}
}

// serving says whether the controller answers on its socket.
func (d *driver) serving(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := csi.NewIdentityClient(d.conn).Probe(ctx, &csi.ProbeRequest{})
	return err == nil
}
