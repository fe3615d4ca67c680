package sanity_test

import (
	"context"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
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

// listHealthyToo plays a driver whose unpaged ControllerListVolumeHealth
// also lists a volume with no adverse condition, which the spec says it
// SHOULD omit.
func listHealthyToo(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	r, ok := req.(*csi.ControllerListVolumeHealthRequest)
	if list, isList := resp.(*csi.ControllerListVolumeHealthResponse); ok && isList && err == nil && r.GetMaxEntries() == 0 && r.GetStartingToken() == "" {
		list = proto.Clone(list).(*csi.ControllerListVolumeHealthResponse)
		list.Entries = append(list.Entries, &csi.VolumeHealth{VolumeId: "zp-healthy-listed"})
		resp = list
	}
	return resp, err
}

// degradedAtFirst plays a driver whose ControllerGetVolumeHealth reports a
// volume DEGRADED the first time it is asked about it when it has no
// adverse condition: a healthy volume not answered with empty
// health_statuses, or one with a condition of its own; either way a SHOULD
// to report, not fail.
func degradedAtFirst() grpc.UnaryServerInterceptor {
	var mu sync.Mutex
	asked := map[string]bool{}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		r, ok := req.(*csi.ControllerGetVolumeHealthRequest)
		if !ok || err != nil {
			return resp, err
		}
		mu.Lock()
		first := !asked[r.GetVolumeId()]
		asked[r.GetVolumeId()] = true
		mu.Unlock()
		if h := resp.(*csi.ControllerGetVolumeHealthResponse); first && len(h.GetVolumeHealth().GetHealthStatuses()) == 0 {
			h = proto.Clone(h).(*csi.ControllerGetVolumeHealthResponse)
			h.VolumeHealth.HealthStatuses = []*csi.VolumeHealth_VolumeHealthEntry{{Status: csi.VolumeHealthErrorType_DEGRADED, Reason: "SlowPool"}}
			resp = h
		}
		return resp, err
	}
}
