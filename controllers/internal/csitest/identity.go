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
	return &csi.GetPluginCapabilitiesResponse{Capabilities: each(services, func(s csi.PluginCapability_Service_Type) *csi.PluginCapability {
		return &csi.PluginCapability{Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{Type: s}}}
	})}
}

// ControllerCapabilities is a ControllerGetCapabilities answer listing rpcs.
func ControllerCapabilities(rpcs ...csi.ControllerServiceCapability_RPC_Type) *csi.ControllerGetCapabilitiesResponse {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: each(rpcs, func(r csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
		return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: r}}}
	})}
}

// each is f of every element of in, in order.
func each[T, C any](in []T, f func(T) C) []C {
	out := make([]C, 0, len(in))
	for _, t := range in {
		out = append(out, f(t))
	}
	return out
}

// NewServer is a gRPC server with ids and ctrl registered, for the
// driver kit to serve.
func NewServer(ids csi.IdentityServer, ctrl csi.ControllerServer) *grpc.Server {
	srv := grpc.NewServer()
	csi.RegisterIdentityServer(srv, ids)
	csi.RegisterControllerServer(srv, ctrl)
	return srv
}
