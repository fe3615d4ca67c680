package sanity_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/drivertest"
	zpsanity "github.com/zonepath/zonepath/sanity"
)

// Shapes of compliant drivers whose behaviour is not zonepath's (issue 32)
// and the drivers that break the rule beside them: thin interceptors in
// front of the in-process driver. They rewrite answers only; the data
// path is not exercised, only the suite's verdict.

// regionalVolumes plays a driver that replicates every volume into a
// second zone of its region and reports both (GCE regional PD,
// replicated arrays): TopologyRequirement x > n, the SP "MAY choose the
// remaining x-n unique topologies from the list of all possible
// topologies".
func regionalVolumes(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := resp.(*csi.CreateVolumeResponse); ok && err == nil {
		r = proto.Clone(r).(*csi.CreateVolumeResponse)
		vol := r.GetVolume()
		for _, t := range vol.GetAccessibleTopology() {
			if next, ok := replicaZone[t.GetSegments()[zoneKey]]; ok {
				vol.AccessibleTopology = append(vol.AccessibleTopology, &csi.Topology{Segments: map[string]string{regionKey: t.GetSegments()[regionKey], zoneKey: next}})
				break
			}
		}
		resp = r
	}
	return resp, err
}

// replicaZone is the zone a regional volume's replica lives in.
var replicaZone = map[string]string{"zone-a": "zone-b", "zone-b": "zone-c", "zone-c": "zone-a"}

// restoreRefusedWith plays a driver that refuses a restore outside the
// snapshot's topology with code c where zonepath answers
// RESOURCE_EXHAUSTED: INVALID_ARGUMENT, "Source incompatible or not
// supported" (spec.md CreateVolume Errors: "cannot create a volume from
// the requested source"), is compliant; INTERNAL is not.
func restoreRefusedWith(c codes.Code) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := req.(*csi.CreateVolumeRequest); ok && r.GetVolumeContentSource() != nil && status.Code(err) == codes.ResourceExhausted {
			return nil, status.Error(c, "cannot create a volume from this snapshot in the requested topology")
		}
		return resp, err
	}
}

const (
	ebsZoneKey = "topology.ebs.csi.aws.com/zone"
	osKey      = "kubernetes.io/os"
)

// ebsKeys plays an AWS EBS-style driver: NodeGetInfo reports a vendor
// zone key, topology.kubernetes.io/zone and an OS key, while volumes and
// snapshots carry only topology.kubernetes.io/zone (zoneOnly). Requests
// lose the node-only keys, which the driver does not read.
func ebsKeys(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		m = proto.Clone(m)
		eachTopology(m.ProtoReflect(), func(t *csi.Topology) { delete(t.Segments, ebsZoneKey); delete(t.Segments, osKey) })
		req = m
	}
	resp, err := zoneOnly(ctx, req, info, handler)
	if r, ok := resp.(*csi.NodeGetInfoResponse); ok && err == nil {
		r = proto.Clone(r).(*csi.NodeGetInfoResponse)
		seg := r.GetAccessibleTopology().GetSegments()
		seg[ebsZoneKey], seg[osKey] = seg[zoneKey], "linux"
		resp = r
	}
	return resp, err
}

// ebsSegments configures the segments in NodeGetInfo's three keys, as a
// vendor writes them from the node: zone-only, plus the node-only keys.
// ebsConfig writes every segment of the configuration, the nodes' too,
// in EBS's keys.
func ebsConfig(c *zpsanity.Config, _ string) {
	ebsSegments(c.Segments)
	ebsSegments([]map[string]string{c.ExhaustedSegment})
	for _, n := range c.Nodes {
		ebsSegments([]map[string]string{n.Segment})
	}
}

func ebsSegments(segs []map[string]string) {
	for _, seg := range segs {
		if z, ok := seg[zoneKey]; ok {
			delete(seg, regionKey)
			seg[ebsZoneKey], seg[osKey] = z, "linux"
		}
	}
}

// fillerSnapshots is how many snapshots manySnapshots lists before the
// driver's own: more than the 10,000 the suite once stopped at.
const fillerSnapshots = 10001

// manySnapshots plays a driver holding over 10,000 snapshots: the
// unfiltered ListSnapshots lists fillerSnapshots others, page by page,
// before the driver's own. With withOwn false it never lists its own,
// a snapshot missing from ListSnapshots, which must still fail.
func manySnapshots(withOwn bool) grpc.UnaryServerInterceptor {
	const prefix = "zp-filler-"
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*csi.ListSnapshotsRequest)
		if !ok || r.GetSnapshotId() != "" || r.GetSourceVolumeId() != "" {
			return handler(ctx, req)
		}
		from := 0
		switch tok := r.GetStartingToken(); {
		case tok == prefix+"end" && withOwn:
			return handler(ctx, &csi.ListSnapshotsRequest{MaxEntries: r.GetMaxEntries()})
		case tok == prefix+"end":
			return &csi.ListSnapshotsResponse{}, nil
		case strings.HasPrefix(tok, prefix):
			n, err := strconv.Atoi(strings.TrimPrefix(tok, prefix))
			if err != nil {
				return nil, status.Errorf(codes.Aborted, "starting_token %q", tok)
			}
			from = n
		case tok != "":
			return handler(ctx, req)
		}
		to := min(fillerSnapshots, from+max(int(r.GetMaxEntries()), 1))
		resp := &csi.ListSnapshotsResponse{NextToken: prefix + strconv.Itoa(to)}
		if to == fillerSnapshots {
			resp.NextToken = prefix + "end"
		}
		for i := from; i < to; i++ {
			resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: &csi.Snapshot{
				SnapshotId: fmt.Sprintf("zps-filler-%d", i), SourceVolumeId: "zpv-filler", ReadyToUse: true}})
		}
		return resp, nil
	}
}

// healthOnlyWhereStaged plays a node that knows only the volumes staged
// or published on it: NodeGetVolumeHealth of any other is NOT_FOUND,
// "a volume corresponding to the specified volume_id does not exist on
// the node" (spec.md NodeGetVolumeHealth Errors).
func healthOnlyWhereStaged(testing.TB, *drivertest.Driver) grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	onNode := map[string]bool{}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		switch r := req.(type) {
		case *csi.NodeGetVolumeHealthRequest:
			if r.GetVolumeId() != "" && !onNode[r.GetVolumeId()] {
				return nil, status.Errorf(codes.NotFound, "volume %s is not on this node", r.GetVolumeId())
			}
		case *csi.NodeStageVolumeRequest:
			onNode[r.GetVolumeId()] = true
		case *csi.NodePublishVolumeRequest:
			onNode[r.GetVolumeId()] = true
		}
		return handler(ctx, req)
	}
}

// nodeHealthNotFound plays a node that answers NOT_FOUND for every
// volume ID, also one staged and published on it.
func nodeHealthNotFound(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*csi.NodeGetVolumeHealthRequest); ok && r.GetVolumeId() != "" {
		return nil, status.Errorf(codes.NotFound, "volume %s is not on this node", r.GetVolumeId())
	}
	return handler(ctx, req)
}

// reportAttachLimit plays a node whose NodeGetInfo reports limit as
// max_volumes_per_node while the controller enforces its own (the
// driver's, 3 in these tests): an advisory cap.
func reportAttachLimit(limit int64) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := resp.(*csi.NodeGetInfoResponse); ok && err == nil {
			r = proto.Clone(r).(*csi.NodeGetInfoResponse)
			r.MaxVolumesPerNode = limit
			resp = r
		}
		return resp, err
	}
}

// publishRefusedWith plays a controller that refuses a publish past the
// node's limit with code c: anything but RESOURCE_EXHAUSTED breaks
// spec.md ControllerPublishVolume Errors ("If the conditions defined below
// are encountered, the plugin MUST return the specified gRPC error code":
// Max volumes attached, 8 RESOURCE_EXHAUSTED).
func publishRefusedWith(c codes.Code) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if _, ok := req.(*csi.ControllerPublishVolumeRequest); ok && status.Code(err) == codes.ResourceExhausted {
			return nil, status.Error(c, "the node takes no more volumes")
		}
		return resp, err
	}
}
