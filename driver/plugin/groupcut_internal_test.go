package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// TestPublishDuringCut: while a group snapshot holds a volume for its cut
// (holdForCut), a read-write ControllerPublishVolume of it is ABORTED,
// spec.md's "Operation pending for volume", and a read-only one, which
// lets no tenant write, goes ahead; once the cut is released the
// read-write publish succeeds, and a cut is then refused with
// FAILED_PRECONDITION naming the volume and the node.
func TestPublishDuringCut(t *testing.T) {
	p := newListPlugin(t)
	ctx := context.Background()
	id := mustVolume(t, p, "cut")
	publish := func(readonly bool) error {
		_, err := p.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: testNode, VolumeCapability: mountCapability(), Readonly: readonly})
		return err
	}
	unpublish := func() {
		if _, err := p.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: testNode}); err != nil {
			t.Fatal(err)
		}
	}
	release, err := p.holdForCut([]*state.Volume{p.store.Volume(id)})
	if err != nil {
		t.Fatal(err)
	}
	if err := publish(false); status.Code(err) != codes.Aborted {
		t.Errorf("read-write publish during a cut: %v, want ABORTED", err)
	}
	if err := publish(true); err != nil {
		t.Errorf("read-only publish during a cut: %v, want OK", err)
	}
	unpublish()
	release()
	if err := publish(false); err != nil {
		t.Fatalf("read-write publish after the cut: %v", err)
	}
	_, err = p.holdForCut([]*state.Volume{p.store.Volume(id)})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), testNode) {
		t.Errorf("cut of a volume published read-write: %v, want FAILED_PRECONDITION naming %s and %s", err, id, testNode)
	}
	unpublish()
	if release, err := p.holdForCut([]*state.Volume{p.store.Volume(id)}); err != nil {
		t.Errorf("cut after unpublishing: %v", err)
	} else {
		release()
	}
}
