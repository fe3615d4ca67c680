package sanity_test

import (
	"context"
	"slices"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Drivers breaking, or keeping in their own way, the rules of
// sharedaccess.go: interceptors in front of the in-process driver, as in
// proofs and personalities.

// multiNode reports whether mode is a MULTI_NODE_* one.
func multiNode(mode csi.VolumeCapability_AccessMode_Mode) bool {
	return slices.Contains([]csi.VolumeCapability_AccessMode_Mode{
		csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER,
	}, mode)
}

// oneNodeOnly plays a driver that attaches a volume to one node at a
// time whatever the access mode, as a block device attaches to one
// machine, while it creates MULTI_NODE_* volumes: it breaks CreateVolume's
// "SP MUST provision a volume that will satisfy ALL of the capabilities".
func oneNodeOnly() grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	published := map[string]string{} // volume: node
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		switch r := req.(type) {
		case *csi.ControllerPublishVolumeRequest:
			if other, ok := published[r.GetVolumeId()]; ok && other != r.GetNodeId() {
				return nil, status.Errorf(codes.FailedPrecondition, "volume %s is attached to node %s", r.GetVolumeId(), other)
			}
			resp, err := handler(ctx, req)
			if err == nil {
				published[r.GetVolumeId()] = r.GetNodeId()
			}
			return resp, err
		case *csi.ControllerUnpublishVolumeRequest:
			resp, err := handler(ctx, req)
			if err == nil && published[r.GetVolumeId()] == r.GetNodeId() {
				delete(published, r.GetVolumeId())
			}
			return resp, err
		}
		return handler(ctx, req)
	}
}

// publishAsMultiWriter plays a driver that ignores the access mode of a
// publish, as if every volume were MULTI_NODE_MULTI_WRITER: a
// SINGLE_NODE_WRITER volume goes to a second node.
func publishAsMultiWriter(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*csi.ControllerPublishVolumeRequest); ok && !multiNode(r.GetVolumeCapability().GetAccessMode().GetMode()) {
		r = proto.Clone(r).(*csi.ControllerPublishVolumeRequest)
		r.VolumeCapability.AccessMode.Mode = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
		req = r
	}
	return handler(ctx, req)
}

// secondNodeRefusedWith plays a driver whose refusal of a publish of a
// single-node volume, which the driver answers FAILED_PRECONDITION, is code
// c with a message that names no node.
func secondNodeRefusedWith(c codes.Code) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if r, ok := req.(*csi.ControllerPublishVolumeRequest); ok && status.Code(err) == codes.FailedPrecondition && !multiNode(r.GetVolumeCapability().GetAccessMode().GetMode()) {
			return nil, status.Error(c, "the volume is in use")
		}
		return resp, err
	}
}

// publishAnywhere plays a driver that answers OK to a publish to a node
// of zone-b or zone-c of testdata/world.yaml, which a volume of zone-a is
// not accessible from: the driver refuses it, the interceptor says OK.
func publishAnywhere(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := req.(*csi.ControllerPublishVolumeRequest); ok && status.Code(err) == codes.FailedPrecondition &&
		slices.Contains([]string{"sanity-node-b", "sanity-node-c"}, r.GetNodeId()) {
		return &csi.ControllerPublishVolumeResponse{}, nil
	}
	return resp, err
}

// refuseMultiNodeModes plays a driver that supports no MULTI_NODE_* access
// mode and says so at CreateVolume (INVALID_ARGUMENT, "Invalid or
// unsupported field in the request").
func refuseMultiNodeModes(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*csi.CreateVolumeRequest); ok {
		for _, c := range r.GetVolumeCapabilities() {
			if multiNode(c.GetAccessMode().GetMode()) {
				return nil, status.Errorf(codes.InvalidArgument, "access mode %s is not supported", c.GetAccessMode().GetMode())
			}
		}
	}
	return handler(ctx, req)
}
