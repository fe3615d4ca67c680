package sanity_test

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The drivers that break the volume health rules (proof_test.go's proofs),
// each a thin interceptor around the correct driver.

// controllerHealthyWhenUnknown plays a driver whose controller answers
// health for any volume ID, known or not, where the spec says NOT_FOUND.
func controllerHealthyWhenUnknown(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := req.(*csi.ControllerGetVolumeHealthRequest); ok && status.Code(err) == codes.NotFound {
		return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: r.GetVolumeId()}}, nil
	}
	return resp, err
}

// nodeHealthyWhenUnknown is controllerHealthyWhenUnknown on the node.
func nodeHealthyWhenUnknown(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := req.(*csi.NodeGetVolumeHealthRequest); ok && status.Code(err) == codes.NotFound {
		return &csi.NodeGetVolumeHealthResponse{VolumeHealth: &csi.VolumeHealth{VolumeId: r.GetVolumeId()}}, nil
	}
	return resp, err
}

// listHealthUnpaged plays a driver whose ControllerListVolumeHealth ignores
// max_entries and answers everything at once.
func listHealthUnpaged(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(*csi.ControllerListVolumeHealthRequest); ok {
		req = &csi.ControllerListVolumeHealthRequest{StartingToken: r.GetStartingToken()}
	}
	return handler(ctx, req)
}

// listHealthAnyToken plays a driver that answers a starting_token it never
// issued with an empty page instead of ABORTED.
func listHealthAnyToken(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if _, ok := req.(*csi.ControllerListVolumeHealthRequest); ok && status.Code(err) == codes.Aborted {
		return &csi.ControllerListVolumeHealthResponse{}, nil
	}
	return resp, err
}

// repeatHealthEntries plays a driver that reports an unhealthy volume's
// conditions twice in ControllerGetVolumeHealth.
func repeatHealthEntries(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if r, ok := resp.(*csi.ControllerGetVolumeHealthResponse); ok && err == nil {
		h := r.GetVolumeHealth()
		h.HealthStatuses = append(h.HealthStatuses, h.GetHealthStatuses()...)
	}
	return resp, err
}
