package e2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func warning(reason, message string) v1.Event {
	return v1.Event{Type: v1.EventTypeWarning, Reason: reason, Message: message, Count: 3}
}

// TestUnitEvidencePointsAtTheComponent: a timed-out wait's message
// carries the evidence and names the component it points at: the driver
// when the provisioner's event carries its gRPC code, the snapshotter's
// content error, the provisioner's own failure, and the scheduler only
// when nothing else recorded a reason.
func TestUnitEvidencePointsAtTheComponent(t *testing.T) {
	refused := warning("ProvisioningFailed", `failed to provision volume with StorageClass "c": rpc error: code = ResourceExhausted desc = requested zones are outside`)
	unschedulable := warning("FailedScheduling", "0/6 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.")
	tests := []struct {
		name string
		p    podEvidence
		want []string
		not  []string
	}{
		{
			name: "the driver refused the restore",
			p: podEvidence{Pod: "elsewhere", Claims: []claimEvidence{{Name: "restore", Phase: "Pending", SelectedNode: "node-b-1", Source: "VolumeSnapshot/s8",
				Snapshot: `VolumeSnapshot s8: ready true, content "snapcontent-1"`, Warnings: []v1.Event{refused}}}},
			want: []string{"claim restore: phase Pending, selected node node-b-1, source VolumeSnapshot/s8", "ProvisioningFailed (x3, code ResourceExhausted)",
				`content "snapcontent-1"`, "points at: the CSI driver answered CreateVolume for claim restore with code ResourceExhausted (node node-b-1)"},
			not: []string{"kube-scheduler"},
		},
		{
			name: "the driver's NotFound for an existing snapshot",
			p: podEvidence{Pod: "p", Claims: []claimEvidence{{Name: "c", Phase: "Pending", SelectedNode: "n", Warnings: []v1.Event{
				warning("ProvisioningFailed", "rpc error: code = NotFound desc = snapshot id x does not exist")}}}},
			want: []string{"with code NotFound (node n)"},
		},
		{
			name: "the snapshot's content has an error",
			p: podEvidence{Pod: "p", Claims: []claimEvidence{{Name: "c", Phase: "Pending", Source: "VolumeSnapshot/s", ContentError: "Failed to check and update snapshot content"}},
				Warnings: []v1.Event{unschedulable}},
			want: []string{"content status.error: Failed to check", "points at: the source of claim c (VolumeSnapshot/s) has a content error"},
			not:  []string{"points at: kube-scheduler"},
		},
		{
			name: "the provisioner failed without a driver code",
			p:    podEvidence{Pod: "p", Claims: []claimEvidence{{Name: "c", Phase: "Pending", Warnings: []v1.Event{warning("ProvisioningFailed", `storageclass.storage.k8s.io "x" not found`)}}}},
			want: []string{"points at: the external-provisioner failed claim c", "selected node none selected"},
		},
		{
			name: "only the scheduler said something",
			p:    podEvidence{Pod: "p", Claims: []claimEvidence{{Name: "c", Phase: "Bound"}}, Warnings: []v1.Event{unschedulable}},
			want: []string{"pod p: FailedScheduling (x3): 0/6 nodes", "points at: kube-scheduler (FailedScheduling)"},
		},
		{
			name: "the driver placed the volume outside the selected node",
			p: podEvidence{Pod: "p", Claims: []claimEvidence{{Name: "c", Phase: "Bound", SelectedNode: "node-b-1", Misplaced: "volume pv-1 (node=zone-a)"}},
				Warnings: []v1.Event{unschedulable}},
			want: []string{"volume pv-1 (node=zone-a) does not admit the selected node", "points at: the CSI driver provisioned claim c's volume pv-1 (node=zone-a), outside its selected node node-b-1"},
			not:  []string{"points at: kube-scheduler"},
		},
		{
			name: "nobody said anything",
			p:    podEvidence{Pod: "p"},
			want: []string{"points at: nothing recorded a reason"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.p.String()
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("evidence lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("evidence has %q:\n%s", n, got)
				}
			}
		})
	}
}

// TestUnitEvidenceNewestProvisioningFailedWins: the claim's blame is the
// newest ProvisioningFailed, so an informer-lag failure that came first
// does not hide the driver's answer.
func TestUnitEvidenceNewestProvisioningFailedWins(t *testing.T) {
	c := claimEvidence{Name: "c", Warnings: []v1.Event{
		warning("ProvisioningFailed", `storageclass.storage.k8s.io "x" not found`),
		warning("ProvisioningFailed", "rpc error: code = InvalidArgument desc = source incompatible"),
	}}
	if got := c.blame(); !strings.Contains(got, "code InvalidArgument") {
		t.Fatalf("blame = %q, want the driver's InvalidArgument", got)
	}
}

// TestUnitCollapseEvents: repeated words become one line with the
// counts summed, in the order of their last occurrence.
func TestUnitCollapseEvents(t *testing.T) {
	a, b := warning("FailedScheduling", "x"), warning("ProvisioningFailed", "y")
	a.Count, b.Count = 1, 2
	got := collapse([]v1.Event{a, b, a, a})
	if len(got) != 2 || got[0].Reason != "ProvisioningFailed" || got[1].Count != 3 || got[0].Count != 2 {
		t.Fatalf("collapse = %+v, want ProvisioningFailed x2 then FailedScheduling x3", got)
	}
}
