package resizer

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/zonepath/zonepath/controllers/internal/csitest"
	"github.com/zonepath/zonepath/driver/drivertest"
)

const testDriver = csitest.DriverName

type (
	expandCalls = csitest.Calls[*csi.ControllerExpandVolumeRequest]
	modifyCalls = csitest.Calls[*csi.ControllerModifyVolumeRequest]
)

// fakeCSI is a CSI identity and controller service whose
// ControllerExpandVolume answers as Calls decides, then grows the volume
// to what was asked, answering nodeRequired; Calls records every request
// and when it came. ControllerModifyVolume answers as modifies decides.
type fakeCSI struct {
	csitest.Identity
	csi.UnimplementedControllerServer
	expandCalls
	controller   bool // EXPAND_VOLUME
	nodeRequired bool
	modify       bool // MODIFY_VOLUME
	modifies     modifyCalls
}

func (f *fakeCSI) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	rsp := csitest.ServiceCapabilities(csi.PluginCapability_Service_CONTROLLER_SERVICE)
	rsp.Capabilities = append(rsp.Capabilities, &csi.PluginCapability{
		Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}},
	})
	return rsp, nil
}

func (f *fakeCSI) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var rpcs []csi.ControllerServiceCapability_RPC_Type
	if f.controller {
		rpcs = append(rpcs, csi.ControllerServiceCapability_RPC_EXPAND_VOLUME)
	}
	if f.modify {
		rpcs = append(rpcs, csi.ControllerServiceCapability_RPC_MODIFY_VOLUME)
	}
	return csitest.ControllerCapabilities(rpcs...), nil
}

func (f *fakeCSI) ControllerModifyVolume(_ context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	if err := f.modifies.Take(req); err != nil {
		return nil, err
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}

func (f *fakeCSI) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	if err := f.Take(req); err != nil {
		return nil, err
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes(), NodeExpansionRequired: f.nodeRequired}, nil
}

// serveCSI serves f on a unix socket until the test ends and returns a
// connection to it.
func serveCSI(t *testing.T, f *fakeCSI) *grpc.ClientConn {
	t.Helper()
	return drivertest.Dial(t, drivertest.Serve(t, csitest.NewServer(f, f)))
}
