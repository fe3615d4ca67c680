// Unit tests of the suite's helpers that need no cluster: go test ./e2e
// runs them without --kubeconfig.
package e2e

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// expectFirstTry excuses only informer lag, never a choice of node.
func TestNotYetSeen(t *testing.T) {
	for _, tc := range []struct {
		reason, message string
		want            bool
	}{
		{"FailedScheduling", `0/8 nodes are available: persistentvolumeclaim "restore-1" not found. preemption: ...`, true},
		{"ProvisioningFailed", `storageclass.storage.k8s.io "zonepath-265-c5lnx" not found`, true},
		{"FailedScheduling", `running PreBind plugin "VolumeBinding": binding volumes: pv "pvc-1" node affinity doesn't match node "node-c-1"`, false},
		{"FailedScheduling", `0/8 nodes are available: 2 node(s) outside the topology of VolumeSnapshot "ns/s"`, false},
		{"ProvisioningFailed", `failed to provision volume: rpc error: code = ResourceExhausted desc = snapshot "snap-1" not found in zone-b`, false},
		{"ProvisioningFailed", `VolumeSnapshot "ns/s" not found`, false},
	} {
		ev := v1.Event{Type: v1.EventTypeWarning, Reason: tc.reason, Message: tc.message}
		if got := notYetSeen(ev); got != tc.want {
			t.Errorf("notYetSeen(%s %q) = %v, want %v", tc.reason, tc.message, got, tc.want)
		}
	}
}

func TestLogsFor(t *testing.T) {
	got := logsFor([]string{labelTopology, labelSnapshotTopology})
	if len(got) == 0 || got[0] != componentLogs[labelTopology][0] {
		t.Fatalf("logsFor = %v, want the topology components first", got)
	}
	seen := map[string]bool{}
	for _, c := range got {
		if seen[c] {
			t.Errorf("component %q listed twice", c)
		}
		seen[c] = true
	}
	if len(logsFor([]string{"unknown"})) == 0 {
		t.Error("a spec without a known label gets no components to read")
	}
}

// crossTerm is the multi-region class of scenario 16c: one term whose
// keys list every segment's values, sorted, each once.
func TestCrossTerm(t *testing.T) {
	got := crossTerm([]driverext.Segment{
		{"region": "r1", "zone": "a"}, {"region": "r1", "zone": "c"}, {"region": "r2", "zone": "b"},
	})
	want := []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
		{Key: "region", Values: []string{"r1", "r2"}},
		{Key: "zone", Values: []string{"a", "b", "c"}},
	}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("crossTerm (-want +got):\n%s", diff)
	}
	for _, node := range []map[string]string{{"region": "r2", "zone": "a"}, {"region": "r1", "zone": "b"}} {
		if !termsMatch(got, node) {
			t.Errorf("the cross product excludes %v", node)
		}
	}
}

// newPod holds each claim as its own volume, in order.
func TestNewPodVolumes(t *testing.T) {
	pod := newPod("p", nil, "restore", "other")
	var got []string
	for _, v := range pod.Spec.Volumes {
		got = append(got, v.Name+"="+v.PersistentVolumeClaim.ClaimName)
	}
	if diff := cmp.Diff([]string{"v0=restore", "v1=other"}, got); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
}

// expectFirstTry tolerates a slow or flaky backend and informer lag, and
// fails on anything that makes the node be chosen again; scenarios 18 and
// 20 match the code the sidecar writes, never the driver's words.
func TestUnitFirstTryTolerated(t *testing.T) {
	for _, tc := range []struct {
		typ, reason, message string
		want                 string // "" is evidence of a node chosen again
	}{
		{v1.EventTypeWarning, "ProvisioningFailed", `failed to provision volume with StorageClass "sc": rpc error: code = Unavailable desc = unavailable`, "transient Unavailable, retried on the same node"},
		{v1.EventTypeWarning, "ProvisioningFailed", `failed to provision volume with StorageClass "sc": rpc error: code = Aborted desc = operation pending`, "transient Aborted, retried on the same node"},
		{v1.EventTypeWarning, "ProvisioningFailed", `failed to provision volume with StorageClass "sc": rpc error: code = DeadlineExceeded desc = context deadline exceeded`, "transient DeadlineExceeded, retried on the same node"},
		{v1.EventTypeWarning, "FailedAttachVolume", `AttachVolume.Attach failed for volume "pvc-1" : rpc error: code = Unavailable desc = throttled`, "transient Unavailable, retried on the same node"},
		{v1.EventTypeWarning, "ProvisioningFailed", `storageclass.storage.k8s.io "sc" not found`, "informer lag"},
		{v1.EventTypeNormal, "Provisioning", `External provisioner is provisioning volume for claim "ns/c"`, "not a Warning"},
		// The provisioner gives up on the selected node: a reschedule.
		{v1.EventTypeWarning, "ProvisioningFailed", `failed to provision volume with StorageClass "sc": rpc error: code = ResourceExhausted desc = resource exhausted`, ""},
		// A refusal of the node's place is final for that node.
		{v1.EventTypeWarning, "ProvisioningFailed", `failed to provision volume with StorageClass "sc": rpc error: code = InvalidArgument desc = invalid argument`, ""},
		{v1.EventTypeWarning, "FailedScheduling", `running PreBind plugin "VolumeBinding": binding volumes: provisioning failed for PVC "c"`, ""},
		// A transient code in a scheduling failure is still a new choice.
		{v1.EventTypeWarning, "FailedScheduling", `0/8 nodes are available: rpc error: code = Unavailable desc = x`, ""},
		{v1.EventTypeWarning, "ProvisioningFailed", `failed to provision volume: no code here`, ""},
	} {
		ev := v1.Event{Type: tc.typ, Reason: tc.reason, Message: tc.message}
		if got := tolerated(ev); got != tc.want {
			t.Errorf("tolerated(%s %q) = %q, want %q", tc.reason, tc.message, got, tc.want)
		}
	}
	for msg, want := range map[string]string{
		`Failed to create snapshot: failed to take snapshot of the volume pvc-1: "rpc error: code = InvalidArgument desc = invalid argument"`: "InvalidArgument",
		`failed to provision volume with StorageClass "sc": rpc error: code = Unavailable desc = unavailable`:                                 "Unavailable",
		`zone zone-b is down`: "",
	} {
		if got := rpcCode(msg); got != want {
			t.Errorf("rpcCode(%q) = %q, want %q", msg, got, want)
		}
	}
}

// waitSnapshotReadyOrFailed waits past the errors csi-snapshotter retries
// in place (a flaky backend) and stops at any other: the driver's answer.
func TestUnitTransientSnapshotError(t *testing.T) {
	for msg, want := range map[string]bool{
		`Failed to create snapshot: failed to take snapshot of the volume v: "rpc error: code = Unavailable desc = backend busy"`:            true,
		`Failed to create snapshot: failed to take snapshot of the volume v: "rpc error: code = Aborted desc = operation pending"`:           true,
		`Failed to create snapshot: failed to take snapshot of the volume v: "rpc error: code = DeadlineExceeded desc = context deadline"`:   true,
		`Failed to create snapshot: failed to take snapshot of the volume v: "rpc error: code = ResourceExhausted desc = zone-d is full"`:    false,
		`Failed to create snapshot: failed to take snapshot of the volume v: "rpc error: code = InvalidArgument desc = no such zone"`:        false,
		`Failed to check and update snapshot content: failed to get input parameters to create snapshot: volume "v" not found, no code here`: false,
	} {
		if got := transientError(msg); got != want {
			t.Errorf("transientError(%q) = %v, want %v", msg, got, want)
		}
	}
}
