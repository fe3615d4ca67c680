package csitest

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// DriverName is the name a fake plugin reports.
const DriverName = "fake.csi.dev"

// Identity answers GetPluginInfo with DriverName and Probe with ready;
// a fake embeds it and answers GetPluginCapabilities itself.
type Identity struct {
	csi.UnimplementedIdentityServer
}

func (Identity) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: DriverName, VendorVersion: "test"}, nil
}

func (Identity) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// ServiceCapabilities is a GetPluginCapabilities answer listing services.
func ServiceCapabilities(services ...csi.PluginCapability_Service_Type) *csi.GetPluginCapabilitiesResponse {
	rsp := &csi.GetPluginCapabilitiesResponse{}
	for _, s := range services {
		rsp.Capabilities = append(rsp.Capabilities, &csi.PluginCapability{
			Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: s}},
		})
	}
	return rsp
}

// ControllerCapabilities is a ControllerGetCapabilities answer listing rpcs.
func ControllerCapabilities(rpcs ...csi.ControllerServiceCapability_RPC_Type) *csi.ControllerGetCapabilitiesResponse {
	rsp := &csi.ControllerGetCapabilitiesResponse{}
	for _, r := range rpcs {
		rsp.Capabilities = append(rsp.Capabilities, &csi.ControllerServiceCapability{
			Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: r}},
		})
	}
	return rsp
}

// NewServer is a gRPC server with ids and ctrl registered, for the
// driver kit to serve.
func NewServer(ids csi.IdentityServer, ctrl csi.ControllerServer) *grpc.Server {
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, ids)
	csi.RegisterControllerServer(srv, ctrl)
	return srv
}
