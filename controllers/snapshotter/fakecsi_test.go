package snapshotter

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zonepath/zonepath/driver/drivertest"
)

const testDriver = "fake.csi.dev"

// fakeCSI is a CSI identity and controller service whose CreateSnapshot
// answers with topology or err and records every request.
type fakeCSI struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	accessibility bool
	topology      []*csi.Topology
	err           error

	mu       sync.Mutex
	requests []*csi.CreateSnapshotRequest
	times    []time.Time
}

func (f *fakeCSI) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: testDriver, VendorVersion: "test"}, nil
}

func (f *fakeCSI) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (f *fakeCSI) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	caps := []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE}
	if f.accessibility {
		caps = append(caps, csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS)
	}
	rsp := &csi.GetPluginCapabilitiesResponse{}
	for _, c := range caps {
		rsp.Capabilities = append(rsp.Capabilities, &csi.PluginCapability{
			Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: c}},
		})
	}
	return rsp, nil
}

func (f *fakeCSI) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{{
		Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT}},
	}}}, nil
}

func (f *fakeCSI) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	f.mu.Lock()
	f.requests = append(f.requests, proto.Clone(req).(*csi.CreateSnapshotRequest))
	f.times = append(f.times, time.Now())
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
		SnapshotId: "snap-id-" + req.GetName(), SourceVolumeId: req.GetSourceVolumeId(), SizeBytes: 1 << 20,
		CreationTime: timestamppb.New(time.Unix(1700000000, 0)), ReadyToUse: true, AccessibleTopology: f.topology,
	}}, nil
}

// answer makes the following calls fail with err (nil: succeed).
func (f *fakeCSI) answer(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *fakeCSI) calls() ([]*csi.CreateSnapshotRequest, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*csi.CreateSnapshotRequest(nil), f.requests...), append([]time.Time(nil), f.times...)
}

// serveCSI serves a fake driver's identity and controller services on a
// unix socket until the test ends and returns a connection to it.
func serveCSI(t *testing.T, ids csi.IdentityServer, ctrl csi.ControllerServer) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, ids)
	csi.RegisterControllerServer(srv, ctrl)
	return drivertest.Dial(t, drivertest.Serve(t, srv))
}

// segment is the kit's segment builder under the name this package's
// tests use.
var segment = drivertest.Segment
