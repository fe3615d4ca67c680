package resizer

import (
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"
)

const gi = 1 << 30

// TestControllerOnlyExpansion: a block volume the plugin grows without the
// node; the resizer records the new capacity on the volume and the claim
// and ends the expansion.
func TestControllerOnlyExpansion(t *testing.T) {
	h := start(t, &fakeCSI{controller: true}, claim("2Gi", "1Gi"), volume("1Gi", true))
	h.eventually("claim capacity 2Gi", func() (bool, string) {
		pvc := h.claim()
		return quantity(pvc.Status.Capacity) == "2Gi", quantity(pvc.Status.Capacity)
	})
	if got := quantity(h.volume().Spec.Capacity); got != "2Gi" {
		t.Errorf("volume capacity %s, want 2Gi", got)
	}
	pvc := h.claim()
	if len(pvc.Status.AllocatedResourceStatuses) != 0 || len(pvc.Status.Conditions) != 0 {
		t.Errorf("expansion not ended: statuses %v, conditions %v", pvc.Status.AllocatedResourceStatuses, pvc.Status.Conditions)
	}
	if quantity(pvc.Status.AllocatedResources) != "2Gi" {
		t.Errorf("allocatedResources %v, want 2Gi", pvc.Status.AllocatedResources)
	}
	if pvc.Annotations[volumetypes.NodeExpansionNotRequired] != "true" {
		t.Errorf("no %s annotation: %v", volumetypes.NodeExpansionNotRequired, pvc.Annotations)
	}
	reqs := h.csi.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d ControllerExpandVolume calls, want 1", len(reqs))
	}
	// CSI 1.13 ControllerExpandVolume: "capacity_range ... This field is
	// REQUIRED"; volume_capability is the volume's, here a block volume.
	if r := reqs[0]; r.GetVolumeId() != "vol-1" || r.GetCapacityRange().GetRequiredBytes() != 2*gi || r.GetVolumeCapability().GetBlock() == nil ||
		r.GetVolumeCapability().GetAccessMode().GetMode() != csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER {
		t.Errorf("request %v", r)
	}
	h.waitEvent("Normal VolumeResizeSuccessful")
}

// TestNodeExpansionRequired: the plugin says node_expansion_required; the
// claim is left as kubelet's NodeExpander waits for it: NodeResizePending,
// FileSystemResizePending, the capacity not yet the claim's.
func TestNodeExpansionRequired(t *testing.T) {
	h := start(t, &fakeCSI{controller: true, nodeRequired: true}, claim("2Gi", "1Gi"), volume("1Gi", false))
	h.eventually("NodeResizePending", func() (bool, string) {
		pvc := h.claim()
		st := pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage]
		return st == v1.PersistentVolumeClaimNodeResizePending, string(st)
	})
	pvc, pv := h.claim(), h.volume()
	if quantity(pv.Spec.Capacity) != "2Gi" || quantity(pvc.Status.Capacity) != "1Gi" || quantity(pvc.Status.AllocatedResources) != "2Gi" {
		t.Errorf("volume %s, claim capacity %s, allocated %s; want 2Gi, 1Gi (kubelet's to record), 2Gi",
			quantity(pv.Spec.Capacity), quantity(pvc.Status.Capacity), quantity(pvc.Status.AllocatedResources))
	}
	if !hasCondition(pvc, v1.PersistentVolumeClaimFileSystemResizePending) {
		t.Errorf("conditions %v, want FileSystemResizePending", pvc.Status.Conditions)
	}
	if reqs := h.csi.Requests(); len(reqs) != 1 || reqs[0].GetVolumeCapability().GetMount().GetFsType() != "ext4" {
		t.Errorf("requests %v, want one with the mount capability and ext4", reqs)
	}
	h.waitEvent("Normal FileSystemResizeRequired")
}

// TestRetriedThenSucceeds: UNAVAILABLE twice (the call may still run:
// retried at the same size), then success; the retries back off.
func TestRetriedThenSucceeds(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "plugin restarting")
	f := &fakeCSI{controller: true, expandCalls: expandCalls{Queue: []error{unavailable, unavailable}}}
	h := start(t, f, claim("2Gi", "1Gi"), volume("1Gi", true))
	h.eventually("claim capacity 2Gi", func() (bool, string) {
		pvc := h.claim()
		return quantity(pvc.Status.Capacity) == "2Gi", quantity(pvc.Status.Capacity)
	})
	reqs, times := f.Requests(), f.Times()
	if len(reqs) != 3 {
		t.Fatalf("%d calls, want 3 (two failures, one success)", len(reqs))
	}
	// 50 ms, then 100 ms: the rate limiter's exponential backoff.
	for i, min := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
		if gap := times[i+1].Sub(times[i]); gap < min {
			t.Errorf("retry %d after %s, want at least %s", i+1, gap, min)
		}
	}
	for _, r := range reqs {
		if r.GetCapacityRange().GetRequiredBytes() != 2*gi {
			t.Errorf("retry asked for %d bytes, want the same 2Gi", r.GetCapacityRange().GetRequiredBytes())
		}
	}
	h.waitEvent("Warning VolumeResizeFailed: resize volume pv-data to 2Gi failed: rpc error: code = Unavailable")
}

// TestOutOfRangeIsFinal: OUT_OF_RANGE marks the claim infeasible with an
// event that says so, and is not retried, not even by the informers'
// resyncs (every 100 ms here); a lower request is expanded.
func TestOutOfRangeIsFinal(t *testing.T) {
	f := &fakeCSI{controller: true, expandCalls: expandCalls{Always: status.Error(codes.OutOfRange, "zone a has no room")}}
	h := startResync(t, f, 100*time.Millisecond, claim("4Gi", "1Gi"), volume("1Gi", true))
	h.eventually("ControllerResizeInfeasible", func() (bool, string) {
		st := h.claim().Status.AllocatedResourceStatuses[v1.ResourceStorage]
		return st == v1.PersistentVolumeClaimControllerResizeInfeasible, string(st)
	})
	h.waitEvent("this is final: the volume is not expanded to this size again until the claim's requested size is changed")
	if !hasCondition(h.claim(), v1.PersistentVolumeClaimControllerResizeError) {
		t.Errorf("conditions %v, want ControllerResizeError", h.claim().Status.Conditions)
	}
	// 20 retry intervals and 10 resyncs: still one call.
	time.Sleep(time.Second)
	if reqs := f.Requests(); len(reqs) != 1 {
		t.Fatalf("%d calls after OUT_OF_RANGE, want 1", len(reqs))
	}
	// Recovery (KEP-1790): the user lowers the request.
	f.Answer(nil)
	h.setRequest("3Gi")
	h.eventually("claim capacity 3Gi", func() (bool, string) {
		pvc := h.claim()
		return quantity(pvc.Status.Capacity) == "3Gi", quantity(pvc.Status.Capacity)
	})
	if reqs := f.Requests(); len(reqs) != 2 || reqs[1].GetCapacityRange().GetRequiredBytes() != 3*gi {
		t.Errorf("requests %v, want a second one for 3Gi", reqs)
	}
}

// TestIgnored: claims the resizer must leave alone: one bound to another
// driver's volume, even when annotated with this driver's name (the
// volume decides), one whose volume needs expansion secrets, and one
// whose request is below its capacity (provisioning rounded it up; a
// volume is never shrunk).
func TestIgnored(t *testing.T) {
	t.Run("other driver", func(t *testing.T) {
		c, pv := claim("2Gi", "1Gi"), volume("1Gi", true)
		c.Annotations = map[string]string{volumetypes.VolumeResizerKey: testDriver}
		pv.Spec.CSI.Driver = "other.csi.dev"
		h := start(t, &fakeCSI{controller: true}, c, pv)
		time.Sleep(500 * time.Millisecond)
		if reqs := h.csi.Requests(); len(reqs) != 0 {
			t.Errorf("%d calls for another driver's claim", len(reqs))
		}
		if pvc := h.claim(); pvc.ResourceVersion != "1" || len(h.events()) != 0 {
			t.Errorf("claim written (rv %s) or events %v", pvc.ResourceVersion, h.events())
		}
	})
	t.Run("secrets", func(t *testing.T) {
		pv := volume("1Gi", true)
		pv.Spec.CSI.ControllerExpandSecretRef = &v1.SecretReference{Namespace: ns, Name: "expand"}
		h := start(t, &fakeCSI{controller: true}, claim("2Gi", "1Gi"), pv)
		h.waitEvent("Warning VolumeResizeFailed: Volume pv-data names controllerExpandSecretRef test/expand: zonepath-resizer does not pass secrets")
		if reqs := h.csi.Requests(); len(reqs) != 0 {
			t.Errorf("%d calls without the volume's secrets", len(reqs))
		}
	})
	t.Run("request below capacity", func(t *testing.T) {
		h := start(t, &fakeCSI{controller: true}, claim("1Gi", "2Gi"), volume("2Gi", true))
		time.Sleep(500 * time.Millisecond)
		if reqs := h.csi.Requests(); len(reqs) != 0 {
			t.Errorf("%d calls for a request below the capacity: a volume is never shrunk", len(reqs))
		}
		if pvc, pv := h.claim(), h.volume(); pvc.ResourceVersion != "1" || quantity(pv.Spec.Capacity) != "2Gi" || len(h.events()) != 0 {
			t.Errorf("claim written (rv %s), volume %s, events %v", pvc.ResourceVersion, quantity(pv.Spec.Capacity), h.events())
		}
	})
}

// TestNodeOnlyPlugin: without EXPAND_VOLUME the plugin is not called and
// the claim goes to kubelet.
func TestNodeOnlyPlugin(t *testing.T) {
	h := start(t, &fakeCSI{}, claim("2Gi", "1Gi"), volume("1Gi", false))
	h.eventually("NodeResizePending", func() (bool, string) {
		st := h.claim().Status.AllocatedResourceStatuses[v1.ResourceStorage]
		return st == v1.PersistentVolumeClaimNodeResizePending, string(st)
	})
	if reqs := h.csi.Requests(); len(reqs) != 0 || quantity(h.volume().Spec.Capacity) != "2Gi" {
		t.Errorf("%d calls, volume %s; want none and 2Gi", len(reqs), quantity(h.volume().Spec.Capacity))
	}
}
