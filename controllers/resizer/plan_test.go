package resizer

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// TestTarget: the size of the next ControllerExpandVolume for each state
// of the recovery protocol, or no call.
func TestTarget(t *testing.T) {
	q := resource.MustParse
	ptr := func(s string) *resource.Quantity { v := q(s); return &v }
	tests := []struct {
		name  string
		state claimState
		want  string // "" : no call
	}{
		{"fresh request", claimState{spec: q("2Gi"), pv: q("1Gi")}, "2Gi"},
		{"controller call may still run: same size", claimState{spec: q("3Gi"), pv: q("1Gi"), status: v1.PersistentVolumeClaimControllerResizeInProgress, allocated: ptr("2Gi")}, "2Gi"},
		{"controller call failed finally: the new request", claimState{spec: q("3Gi"), pv: q("1Gi"), status: v1.PersistentVolumeClaimControllerResizeInProgress, allocated: ptr("2Gi"), lastFinal: true}, "3Gi"},
		{"infeasible, request unchanged: wait for the user", claimState{spec: q("4Gi"), pv: q("1Gi"), status: v1.PersistentVolumeClaimControllerResizeInfeasible, allocated: ptr("4Gi")}, ""},
		{"infeasible, request lowered", claimState{spec: q("3Gi"), pv: q("1Gi"), status: v1.PersistentVolumeClaimControllerResizeInfeasible, allocated: ptr("4Gi")}, "3Gi"},
		{"infeasible, lowered to what the volume has", claimState{spec: q("1Gi"), pv: q("1Gi"), status: v1.PersistentVolumeClaimControllerResizeInfeasible, allocated: ptr("4Gi")}, "1Gi"},
		{"node pending, volume grown: kubelet's turn", claimState{spec: q("2Gi"), pv: q("2Gi"), status: v1.PersistentVolumeClaimNodeResizePending, allocated: ptr("2Gi")}, ""},
		{"node in progress, larger request: finish first", claimState{spec: q("3Gi"), pv: q("2Gi"), status: v1.PersistentVolumeClaimNodeResizeInProgress, allocated: ptr("2Gi")}, ""},
		{"node infeasible: back to the controller", claimState{spec: q("3Gi"), pv: q("2Gi"), status: v1.PersistentVolumeClaimNodeResizeInfeasible, allocated: ptr("2Gi")}, "2Gi"},
		{"expanded but not recorded", claimState{spec: q("2Gi"), pv: q("2Gi"), allocated: ptr("2Gi")}, "2Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size, skip := tc.state.target()
			got := ""
			if skip == "" {
				got = size.String()
			}
			if got != tc.want {
				t.Errorf("target = %q (skip %q), want %q", got, skip, tc.want)
			}
		})
	}
}

// TestClassify: which ControllerExpandVolume errors are retried at the
// same size, retried with a new size allowed, or final for the size.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want failure
	}{
		{status.Error(codes.DeadlineExceeded, ""), inProgress},
		{status.Error(codes.Unavailable, ""), inProgress},
		{status.Error(codes.Aborted, ""), inProgress},
		{status.Error(codes.ResourceExhausted, ""), inProgress},
		{errors.New("not gRPC"), inProgress},
		{status.Error(codes.Internal, ""), final},
		{status.Error(codes.FailedPrecondition, ""), final},
		{status.Error(codes.OutOfRange, ""), infeasible},
		{status.Error(codes.InvalidArgument, ""), infeasible},
		{status.Error(codes.NotFound, ""), infeasible},
	} {
		if got := classify(tc.err); got != tc.want {
			t.Errorf("classify(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Options{DriverName: "d", Timeout: time.Second, Workers: 1, RetryIntervalStart: time.Second, RetryIntervalMax: time.Second}
	for _, tc := range []struct {
		name    string
		change  func(*Options)
		wantErr string
	}{
		{"ok", func(*Options) {}, ""},
		{"no driver", func(o *Options) { o.DriverName = "" }, "driver name is empty"},
		{"no workers", func(o *Options) { o.Workers = 0 }, "--workers must be at least 1, not 0"},
		{"no timeout", func(o *Options) { o.Timeout = 0 }, "--timeout must be positive"},
		{"max below start", func(o *Options) { o.RetryIntervalMax = time.Millisecond }, "--retry-interval-max at least"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.change(&o)
			wanterr.Check(t, o.Validate(), tc.wantErr)
		})
	}
}
