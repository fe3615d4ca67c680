package resizer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/zonepath/zonepath/driver/drivertest"
)

const testDriver = "fake.csi.dev"

// fakeCSI is a CSI identity and controller service whose
// ControllerExpandVolume fails with the queued errors, then grows the
// volume to what was asked, answering nodeRequired; it records every
// request and when it came.
type fakeCSI struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	controller   bool // EXPAND_VOLUME
	nodeRequired bool
	modify       bool // MODIFY_VOLUME

	modifyErrs []error // the next ControllerModifyVolume calls' errors; nil entries and after them: success
	modifies   []*csi.ControllerModifyVolumeRequest

	mu       sync.Mutex
	errs     []error // the next calls' errors, in order; a nil entry succeeds
	always   error   // after errs: every call fails with it (nil: succeeds)
	requests []*csi.ControllerExpandVolumeRequest
	times    []time.Time
}

func (f *fakeCSI) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: testDriver, VendorVersion: "test"}, nil
}

func (f *fakeCSI) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

func (f *fakeCSI) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{
		{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}}},
		{Type: &csi.PluginCapability_VolumeExpansion_{VolumeExpansion: &csi.PluginCapability_VolumeExpansion{Type: csi.PluginCapability_VolumeExpansion_ONLINE}}},
	}}, nil
}

func (f *fakeCSI) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	rsp := &csi.ControllerGetCapabilitiesResponse{}
	if f.controller {
		rsp.Capabilities = append(rsp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_EXPAND_VOLUME}},
		})
	}
	if f.modify {
		rsp.Capabilities = append(rsp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: csi.ControllerServiceCapability_RPC_MODIFY_VOLUME}},
		})
	}
	return rsp, nil
}

func (f *fakeCSI) ControllerModifyVolume(_ context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modifies = append(f.modifies, proto.Clone(req).(*csi.ControllerModifyVolumeRequest))
	var err error
	if len(f.modifyErrs) > 0 {
		err, f.modifyErrs = f.modifyErrs[0], f.modifyErrs[1:]
	}
	if err != nil {
		return nil, err
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}

func (f *fakeCSI) modifyCalls() []*csi.ControllerModifyVolumeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*csi.ControllerModifyVolumeRequest(nil), f.modifies...)
}

func (f *fakeCSI) ControllerExpandVolume(_ context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, proto.Clone(req).(*csi.ControllerExpandVolumeRequest))
	f.times = append(f.times, time.Now())
	err := f.always
	if len(f.errs) > 0 {
		err, f.errs = f.errs[0], f.errs[1:]
	}
	if err != nil {
		return nil, err
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: req.GetCapacityRange().GetRequiredBytes(), NodeExpansionRequired: f.nodeRequired}, nil
}

// answer makes the following calls fail with err (nil: succeed).
func (f *fakeCSI) answer(err error) {
	f.mu.Lock()
	f.always = err
	f.mu.Unlock()
}

func (f *fakeCSI) calls() ([]*csi.ControllerExpandVolumeRequest, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*csi.ControllerExpandVolumeRequest(nil), f.requests...), append([]time.Time(nil), f.times...)
}

// serveCSI serves f on a unix socket until the test ends and returns a
// connection to it.
func serveCSI(t *testing.T, f *fakeCSI) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, f)
	csi.RegisterControllerServer(srv, f)
	return drivertest.Dial(t, drivertest.Serve(t, srv))
}
