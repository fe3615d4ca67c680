// Package csicode reads a CSI call's gRPC error as the kubernetes-csi
// sidecars do. It owns that one rule; it must not decide what a caller
// does about it (retry, backoff, annotations, pins).
package csicode

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// InProgress says whether the call that returned err may still be
// running on the plugin, or may have done its work without the caller
// learning it: an error without a gRPC status, or CANCELLED,
// DEADLINE_EXCEEDED, UNAVAILABLE, RESOURCE_EXHAUSTED or ABORTED. It is
// the negation of external-snapshotter's isCSIFinalError and of
// external-resizer's final-error rule: "creating snapshot either did not
// even start or failed. It is for sure not in progress" holds for every
// other code.
func InProgress(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return true
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return true
	}
	return false
}
