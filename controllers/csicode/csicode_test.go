package csicode

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestInProgress(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{err: errors.New("not a gRPC status"), want: true},
		{err: status.Error(codes.Canceled, ""), want: true},
		{err: status.Error(codes.DeadlineExceeded, ""), want: true},
		{err: status.Error(codes.Unavailable, ""), want: true},
		{err: status.Error(codes.ResourceExhausted, ""), want: true},
		{err: status.Error(codes.Aborted, ""), want: true},
		{err: status.Error(codes.InvalidArgument, ""), want: false},
		{err: status.Error(codes.NotFound, ""), want: false},
		{err: status.Error(codes.Internal, ""), want: false},
		{err: status.Error(codes.AlreadyExists, ""), want: false},
	} {
		if got := InProgress(tc.err); got != tc.want {
			t.Errorf("InProgress(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
