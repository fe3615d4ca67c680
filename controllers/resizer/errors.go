package resizer

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/controllers/csicode"
)

// failure classifies an error of ControllerExpandVolume.
type failure int

const (
	// inProgress: the call may still be running in the plugin (a
	// timeout, a lost connection, ABORTED, RESOURCE_EXHAUSTED), or it
	// failed before reaching it: retry at the same size.
	inProgress failure = iota
	// final: the plugin answered and did nothing (INTERNAL,
	// FAILED_PRECONDITION ...): retry, and a changed request may replace
	// the size.
	final
	// infeasible: the plugin refuses this size for good (CSI 1.13,
	// ControllerExpandVolume errors: OUT_OF_RANGE "Indicates that the
	// capacity range is not allowed by the Plugin"; INVALID_ARGUMENT;
	// NOT_FOUND "Indicates that a volume corresponding to the specified
	// volume_id does not exist"): no retry until the user changes the
	// request.
	infeasible
)

func classify(err error) failure {
	if csicode.InProgress(err) {
		return inProgress
	}
	switch status.Code(err) {
	case codes.OutOfRange, codes.InvalidArgument, codes.NotFound:
		return infeasible
	}
	return final
}
