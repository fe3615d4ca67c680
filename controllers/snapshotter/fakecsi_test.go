package snapshotter

import (
	"context"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/zonepath/zonepath/controllers/internal/csitest"
	"github.com/zonepath/zonepath/driver/drivertest"
)

const testDriver = csitest.DriverName

type createCalls = csitest.Calls[*csi.CreateSnapshotRequest]

// fakeCSI is a CSI identity and controller service whose CreateSnapshot
// answers with topology, or the error Calls decides; Calls records every
// request.
type fakeCSI struct {
	csitest.Identity
	csi.UnimplementedControllerServer
	createCalls
	accessibility bool
	topology      []*csi.Topology
}

func (f *fakeCSI) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	caps := []csi.PluginCapability_Service_Type{csi.PluginCapability_Service_CONTROLLER_SERVICE}
	if f.accessibility {
		caps = append(caps, csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS)
	}
	return csitest.ServiceCapabilities(caps...), nil
}

func (f *fakeCSI) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return csitest.ControllerCapabilities(csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT), nil
}

func (f *fakeCSI) CreateSnapshot(_ context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	if err := f.Take(req); err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: &csi.Snapshot{
		SnapshotId: "snap-id-" + req.GetName(), SourceVolumeId: req.GetSourceVolumeId(), SizeBytes: 1 << 20,
		CreationTime: timestamppb.New(time.Unix(1700000000, 0)), ReadyToUse: true, AccessibleTopology: f.topology,
	}}, nil
}

// serveCSI serves a fake driver's identity and controller services on a
// unix socket until the test ends and returns a connection to it.
func serveCSI(t *testing.T, ids csi.IdentityServer, ctrl csi.ControllerServer) *grpc.ClientConn {
	t.Helper()
	return drivertest.Dial(t, drivertest.Serve(t, csitest.NewServer(ids, ctrl)))
}

// segment is the kit's segment builder under the name this package's
// tests use.
var segment = drivertest.Segment
