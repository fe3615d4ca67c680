package nulldriver

import (
	"context"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The default world's keys and the zone zonepath places everything in
// when nothing asks otherwise.
const (
	regionKey = "topology.kubernetes.io/region"
	zoneKey   = "topology.kubernetes.io/zone"
	// tokenPrefix is zonepath's: tokens are the same length.
	tokenPrefix = "zp1:"
	volumeSize  = 1 << 30
)

// Driver is the null driver: every response it gives is built by New.
type Driver struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer

	pageSize       int
	volumePages    map[string]*csi.ListVolumesResponse
	snapshotPages  map[string]*csi.ListSnapshotsResponse
	createVolume   *csi.CreateVolumeResponse
	createSnapshot *csi.CreateSnapshotResponse
}

// New is a null driver listing volumes and snapshots in pages of pageSize
// (all in one page when 0), the one max_entries its list calls accept.
func New(volumes, snapshots, pageSize int) *Driver {
	now := timestamppb.New(time.Now())
	vols := make([]*csi.ListVolumesResponse_Entry, volumes)
	for i := range vols {
		vols[i] = &csi.ListVolumesResponse_Entry{Volume: volume(i), Status: &csi.ListVolumesResponse_VolumeStatus{}}
	}
	snaps := make([]*csi.ListSnapshotsResponse_Entry, snapshots)
	for i := range snaps {
		snaps[i] = &csi.ListSnapshotsResponse_Entry{Snapshot: snapshot(i, now)}
	}
	return &Driver{
		pageSize: pageSize,
		volumePages: pages(vols, pageSize, func(e *csi.ListVolumesResponse_Entry) string { return e.Volume.VolumeId },
			func(page []*csi.ListVolumesResponse_Entry, next string) *csi.ListVolumesResponse {
				return &csi.ListVolumesResponse{Entries: page, NextToken: next}
			}),
		snapshotPages: pages(snaps, pageSize, func(e *csi.ListSnapshotsResponse_Entry) string { return e.Snapshot.SnapshotId },
			func(page []*csi.ListSnapshotsResponse_Entry, next string) *csi.ListSnapshotsResponse {
				return &csi.ListSnapshotsResponse{Entries: page, NextToken: next}
			}),
		createVolume:   &csi.CreateVolumeResponse{Volume: volume(0)},
		createSnapshot: &csi.CreateSnapshotResponse{Snapshot: snapshot(0, now)},
	}
}

func volume(i int) *csi.Volume {
	// volume_context as zonepath's: its current IOPS tier.
	return &csi.Volume{VolumeId: fmt.Sprintf("zpv-%024x", i), CapacityBytes: volumeSize, AccessibleTopology: zoneA(),
		VolumeContext: map[string]string{"zonepath.csi.dev/iopsTier": "standard"}}
}

// snapshot i is of volume i%100, as make bench spreads its snapshots.
func snapshot(i int, created *timestamppb.Timestamp) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId: fmt.Sprintf("zps-%024x", i), SourceVolumeId: fmt.Sprintf("zpv-%024x", i%100),
		SizeBytes: volumeSize, CreationTime: created, ReadyToUse: true, AccessibleTopology: zoneA(),
	}
}

func zoneA() []*csi.Topology {
	return []*csi.Topology{{Segments: map[string]string{regionKey: "region-1", zoneKey: "zone-a"}}}
}

// pages cuts entries into pages of size (all in one when size is 0),
// keyed by the starting_token that asks for each, and encodes each page
// once: a page served is its bytes carried as unknown fields, which
// marshal as a copy, so serving one costs the transport only.
func pages[E any, R proto.Message](entries []E, size int, id func(E) string, page func([]E, string) R) map[string]R {
	if size <= 0 {
		size = max(len(entries), 1)
	}
	out := map[string]R{}
	token := ""
	for start := 0; start == 0 || start < len(entries); start += size {
		end := min(start+size, len(entries))
		next := ""
		if end < len(entries) {
			next = tokenPrefix + id(entries[end])
		}
		full, err := proto.Marshal(page(entries[start:end], next))
		if err != nil {
			panic(err) // plain fields always encode
		}
		raw := page(nil, "")
		raw.ProtoReflect().SetUnknown(full)
		out[token] = raw
		token = next
	}
	return out
}

func (d *Driver) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: "nulldriver.zonepath.csi.dev", VendorVersion: "0"}, nil
}

func (d *Driver) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (d *Driver) CreateVolume(context.Context, *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	return d.createVolume, nil
}

func (d *Driver) DeleteVolume(context.Context, *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	return &csi.DeleteVolumeResponse{}, nil
}

func (d *Driver) CreateSnapshot(context.Context, *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	return d.createSnapshot, nil
}

func (d *Driver) DeleteSnapshot(context.Context, *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	return &csi.DeleteSnapshotResponse{}, nil
}

func (d *Driver) ListVolumes(_ context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	return page(d, d.volumePages, req.GetMaxEntries(), req.GetStartingToken())
}

func (d *Driver) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	return page(d, d.snapshotPages, req.GetMaxEntries(), req.GetStartingToken())
}

// page returns the page a request asks for; it knows one page size and
// the tokens it issued.
func page[R any](d *Driver, pages map[string]R, max int32, token string) (R, error) {
	var none R
	if int(max) != d.pageSize {
		return none, status.Errorf(codes.InvalidArgument, "max_entries %d: the null driver serves pages of %d only", max, d.pageSize)
	}
	p, ok := pages[token]
	if !ok {
		return none, status.Errorf(codes.Aborted, "starting_token %q was not issued", token)
	}
	return p, nil
}
