package csicode

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestInProgress holds every gRPC code, and an error without one, to the
// sidecars' rule.
func TestInProgress(t *testing.T) {
	inProgress := map[codes.Code]bool{
		codes.Canceled: true, codes.DeadlineExceeded: true, codes.Unavailable: true,
		codes.ResourceExhausted: true, codes.Aborted: true,
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if got := InProgress(status.Error(c, "")); got != inProgress[c] {
			t.Errorf("InProgress(%v) = %v, want %v", c, got, inProgress[c])
		}
	}
	if !InProgress(errors.New("no gRPC status")) {
		t.Error("an error without a gRPC status must count as in progress: the call may not have reached the plugin")
	}
}
