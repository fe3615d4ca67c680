package sanity

import (
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

var (
	zoneDown      = condition{csi.VolumeHealthErrorType_INACCESSIBLE, "ZoneDown"}
	replicaDown   = condition{csi.VolumeHealthErrorType_DEGRADED, "ReplicaZoneDown"}
	slowPool      = condition{csi.VolumeHealthErrorType_DEGRADED, "SlowPool"}
	futureType    = condition{csi.VolumeHealthErrorType(7), "MultipathLoss"}
	dataLossFound = condition{csi.VolumeHealthErrorType_DATA_LOSS, "ZoneDown"}
)

func health(cs ...condition) *csi.VolumeHealth {
	h := &csi.VolumeHealth{VolumeId: "v"}
	for _, c := range cs {
		h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{Status: c.status, Reason: c.reason, Message: "whatever"})
	}
	return h
}

// TestAdded: a condition is the outage's when its (status, reason) was not
// reported before it, whatever its type.
func TestAdded(t *testing.T) {
	tests := []struct {
		name          string
		before, after []condition
		want          []condition
	}{
		{"healthy, then INACCESSIBLE", nil, []condition{zoneDown}, []condition{zoneDown}},
		{"healthy, then DEGRADED", nil, []condition{replicaDown}, []condition{replicaDown}},
		{"a type of a newer spec", nil, []condition{futureType}, []condition{futureType}},
		{"DEGRADED from the start, still only that", []condition{slowPool}, []condition{slowPool}, nil},
		{"DEGRADED from the start, another DEGRADED reason", []condition{slowPool}, []condition{slowPool, replicaDown}, []condition{replicaDown}},
		{"same reason, another status", []condition{zoneDown}, []condition{dataLossFound}, []condition{dataLossFound}},
		{"a condition gone", []condition{slowPool}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := added(health(tt.after...), tt.before); !slices.Equal(got, tt.want) {
				t.Errorf("added(%v, before %v) = %v, want %v", tt.after, tt.before, got, tt.want)
			}
		})
	}
}

// TestNodeEcho: what the node's new conditions leave unechoed of the
// controller's.
func TestNodeEcho(t *testing.T) {
	tests := []struct {
		name             string
		controller, node []condition
		want             string
	}{
		{"both INACCESSIBLE", []condition{zoneDown}, []condition{zoneDown}, ""},
		{"node reports nothing new", []condition{zoneDown}, nil, "INACCESSIBLE"},
		{"node only DEGRADED where the controller says INACCESSIBLE", []condition{zoneDown}, []condition{replicaDown}, "INACCESSIBLE"},
		{"regional: controller DEGRADED, node of the down zone INACCESSIBLE", []condition{replicaDown}, []condition{zoneDown}, ""},
		{"both DEGRADED, other reasons", []condition{replicaDown}, []condition{slowPool}, ""},
		{"controller DEGRADED, node nothing new", []condition{replicaDown}, nil, "DEGRADED"},
		{"two controller statuses, node nothing new", []condition{replicaDown, futureType, slowPool}, nil, "DEGRADED, 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeEcho(tt.controller, tt.node); got != tt.want {
				t.Errorf("nodeEcho(%v, %v) = %q, want %q", tt.controller, tt.node, got, tt.want)
			}
		})
	}
}
