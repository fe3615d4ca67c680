package plugin_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
)

// sharedWorld has three nodes in zone-a (the driver's own node-1,
// node-a2, node-a3) and node-b in zone-b: a zone's nodes share its store.
const sharedWorld = `nodes:
- {id: node-a2, zone: zone-a}
- {id: node-a3, zone: zone-a}
- {id: node-b, zone: zone-b}
regions:
- name: region-1
  zones: [{name: zone-a}, {name: zone-b}]
`

// newSharedDriver serves a driver in sharedWorld.
func newSharedDriver(t *testing.T) *testDriver {
	t.Helper()
	d := &testDriver{Driver: drivertest.Start(t, drivertest.Options{World: sharedWorld})}
	d.client = newCSIClient(t, d.Driver)
	return d
}

// modeCapability is a capability of the access type with mode.
func modeCapability(block bool, mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	c := drivertest.Capability(block)
	c.AccessMode.Mode = mode
	return c
}

const (
	snw  = csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	snro = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	mnro = csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	mnsw = csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER
	mnmw = csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
)

// publishStep is one ControllerPublishVolume (or, with unpublish, one
// ControllerUnpublishVolume; with restart, a driver restart) and what it
// must answer: the code, and for OK whether the publish_context marks the
// node's publish read-only.
type publishStep struct {
	node      string
	mode      csi.VolumeCapability_AccessMode_Mode
	readonly  bool
	unpublish bool
	restart   bool
	want      codes.Code
	wantRO    bool
}

func publishes(node string, mode csi.VolumeCapability_AccessMode_Mode, readonly bool, want codes.Code, wantRO bool) publishStep {
	return publishStep{node: node, mode: mode, readonly: readonly, want: want, wantRO: wantRO}
}

const refused = codes.FailedPrecondition

// TestAccessModesAcrossNodes: ControllerPublishVolume honours each
// publication's access mode across the nodes of the volume's zone, and
// refuses a node of another zone whatever the mode (FAILED_PRECONDITION,
// driver/README.md Errors: the node cannot reach the zone's store). The
// clauses are csi.proto's AccessMode comments and spec.md
// ControllerPublishVolume ("The CO MAY call this RPC for publishing a
// volume to multiple nodes if the volume has MULTI_NODE capability";
// Errors: "Volume published to another node", FAILED_PRECONDITION;
// "Volume published but is incompatible", ALREADY_EXISTS, for the same
// node with another readonly). Every case runs on a mount and a block
// volume.
func TestAccessModesAcrossNodes(t *testing.T) {
	cases := []struct {
		name  string
		steps []publishStep
	}{
		{"MULTI_NODE_MULTI_WRITER: any node of the zone, read-write", []publishStep{
			publishes("node-1", mnmw, false, codes.OK, false),
			publishes("node-a2", mnmw, false, codes.OK, false),
			publishes("node-a3", mnmw, true, codes.OK, true),
			publishes("node-b", mnmw, false, refused, false),
		}},
		{"MULTI_NODE_READER_ONLY: read-only on every node, also when readonly is false", []publishStep{
			publishes("node-1", mnro, false, codes.OK, true),
			publishes("node-a2", mnro, false, codes.OK, true),
			publishes("node-a2", mnro, true, codes.OK, true), // the same publish: read-only either way
			publishes("node-a2", mnmw, false, codes.AlreadyExists, false),
			publishes("node-b", mnro, true, refused, false),
		}},
		{"SINGLE_NODE_READER_ONLY: read-only, one node", []publishStep{
			publishes("node-1", snro, false, codes.OK, true),
			publishes("node-a2", snro, true, refused, false),
		}},
		{"MULTI_NODE_SINGLE_WRITER: one read-write node, the rest read-only", []publishStep{
			publishes("node-1", mnsw, false, codes.OK, false),
			publishes("node-a2", mnsw, false, refused, false),
			publishes("node-a2", mnsw, true, codes.OK, true),
			publishes("node-a3", mnmw, false, refused, false), // node-1's mode admits one writer
			publishes("node-b", mnsw, true, refused, false),
			{node: "node-1", unpublish: true},
			publishes("node-a3", mnsw, false, codes.OK, false),
		}},
		{"MULTI_NODE_SINGLE_WRITER: the mode is kept across a restart", []publishStep{
			publishes("node-a2", mnsw, false, codes.OK, false),
			{restart: true},
			publishes("node-a3", mnmw, false, refused, false),
			publishes("node-a3", mnmw, true, codes.OK, true),
		}},
		{"a SINGLE_NODE_* publication admits no other node, whatever the new mode", []publishStep{
			publishes("node-1", snw, false, codes.OK, false),
			publishes("node-a2", mnmw, false, refused, false),
			publishes("node-a2", mnro, true, refused, false),
			{node: "node-1", unpublish: true},
			publishes("node-a2", mnmw, false, codes.OK, false),
		}},
		{"a SINGLE_NODE_* publish beside another node's publication", []publishStep{
			publishes("node-1", mnmw, false, codes.OK, false),
			publishes("node-a2", snw, false, refused, false),
		}},
	}
	for _, block := range []bool{false, true} {
		for i, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s", accessName(block), tc.name), func(t *testing.T) {
				d := newSharedDriver(t)
				req := sizedRequest(fmt.Sprintf("shared-%d", i), block, &csi.CapacityRange{RequiredBytes: 1 << 20})
				req.AccessibilityRequirements = drivertest.Requisite(zone("zone-a"))
				id := d.mustCreateVolume(req).GetVolumeId()
				for n, s := range tc.steps {
					d.runPublishStep(t, n, id, block, s)
				}
			})
		}
	}
}

func (d *testDriver) runPublishStep(t *testing.T, n int, id string, block bool, s publishStep) {
	t.Helper()
	ctx := context.Background()
	switch {
	case s.restart:
		d.restart(t)
		return
	case s.unpublish:
		d.client.unpublish(id, s.node)
		return
	}
	resp, err := d.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: id, NodeId: s.node, VolumeCapability: modeCapability(block, s.mode), Readonly: s.readonly,
	})
	if got := codeOf(err); got != s.want {
		t.Fatalf("step %d: ControllerPublishVolume to %s, %s, readonly=%t: %v, want %s", n, s.node, s.mode, s.readonly, err, s.want)
	}
	if err != nil {
		return
	}
	if ro := resp.GetPublishContext()["zonepath.csi.dev/readonly"] == "true"; ro != s.wantRO {
		t.Errorf("step %d: publish to %s, %s, readonly=%t: publish_context %v, want read-only %t", n, s.node, s.mode, s.readonly, resp.GetPublishContext(), s.wantRO)
	}
}
