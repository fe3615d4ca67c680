package plugin

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// codeMeanings are the messages of the topology file's terseErrors knob:
// the meaning of each gRPC code and nothing else. CSI leaves a status
// message to the plugin: it is "a human readable description" of the
// error (spec.md "Error Scheme"), so a CO may read only the code, and
// drivers that say no more than the code are compliant.
var codeMeanings = map[codes.Code]string{
	codes.Canceled:           "canceled",
	codes.Unknown:            "unknown error",
	codes.InvalidArgument:    "invalid argument",
	codes.DeadlineExceeded:   "deadline exceeded",
	codes.NotFound:           "not found",
	codes.AlreadyExists:      "already exists",
	codes.PermissionDenied:   "permission denied",
	codes.ResourceExhausted:  "resource exhausted",
	codes.FailedPrecondition: "failed precondition",
	codes.Aborted:            "aborted",
	codes.OutOfRange:         "out of range",
	codes.Unimplemented:      "unimplemented",
	codes.Internal:           "internal error",
	codes.Unavailable:        "unavailable",
	codes.DataLoss:           "data loss",
	codes.Unauthenticated:    "unauthenticated",
}

// terseErrors replaces the message of every error with its code's
// meaning, keeping the code, so a driver that names no zone and no object
// in its errors can be played.
func terseErrors(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil {
		return resp, nil
	}
	code := status.Code(err)
	return nil, status.Error(code, codeMeanings[code])
}
