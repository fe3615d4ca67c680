package sanity

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// ruleModifyIdempotent: ControllerModifyVolume "MUST be idempotent"
// (spec.md ControllerModifyVolume). Upstream csi-sanity modifies a volume
// once; a CO repeats the call after a timeout, and external-resizer
// reconciles a VolumeAttributesClass until the call succeeds, so the same
// request reaches a driver again after it has applied it.
var ruleModifyIdempotent = Label("modify-volume", "rule:modify-idempotent")

const modifyVolumeCap = csi.ControllerServiceCapability_RPC_MODIFY_VOLUME

var _ = describe("ModifyVolume [zonepath]", nil, func(s *suite) {
	It("modifies a volume twice with the same mutable_parameters: OK both times, the volume as after the first (spec.md ControllerModifyVolume: \"This operation MUST be idempotent\")", ruleModifyIdempotent, func() {
		params := s.needMutableParameters()
		ctx := context.Background()
		vol := s.volume("zp-modify-twice", nil)
		req := &csi.ControllerModifyVolumeRequest{VolumeId: vol.GetVolumeId(), MutableParameters: params, Secrets: s.sc.Secrets.ControllerModifyVolumeSecret}
		_, err := s.r.ControllerModifyVolume(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "ControllerModifyVolume of volume %s with %v (--csi.testvolumemutableparameters, a set the driver accepts)", vol.GetVolumeId(), params)
		first := s.volumeState(vol.GetVolumeId())
		_, err = s.r.ControllerModifyVolume(ctx, req)
		Expect(err).NotTo(HaveOccurred(), "the same ControllerModifyVolume of volume %s again: the operation \"MUST be idempotent\", so a repeat of an applied modification is OK, not an error", vol.GetVolumeId())
		if first != nil {
			again := s.volumeState(vol.GetVolumeId())
			Expect(again.GetCapacityBytes()).To(Equal(first.GetCapacityBytes()), "ControllerGetVolume of volume %s: capacity_bytes after the repeated modification", vol.GetVolumeId())
			Expect(sameSegments(again.GetAccessibleTopology(), first.GetAccessibleTopology())).To(BeTrue(),
				"ControllerGetVolume of volume %s: accessible_topology %s after the repeated modification, %s after the first", vol.GetVolumeId(), formatAll(again.GetAccessibleTopology()), formatAll(first.GetAccessibleTopology()))
		}
	})
})

// needMutableParameters returns the configured mutable parameters, or
// skips: they are the driver's own (a VolumeAttributesClass it accepts),
// so without --csi.testvolumemutableparameters there is nothing to send
// (an empty mutable_parameters modifies nothing), and without
// MODIFY_VOLUME there is no ControllerModifyVolume to call.
func (s *suite) needMutableParameters() map[string]string {
	s.needControllerCap(modifyVolumeCap)
	params := s.sc.Config.TestVolumeMutableParameters
	if len(params) == 0 {
		Skip("no mutable parameters configured (--csi.testvolumemutableparameters): nothing the driver accepts is known to send")
	}
	return params
}

// volumeState is the volume as ControllerGetVolume returns it, or nil
// without GET_VOLUME: what the CO can see of a volume's state.
func (s *suite) volumeState(id string) *csi.Volume {
	GinkgoHelper()
	if !s.d.controllerCapability(csi.ControllerServiceCapability_RPC_GET_VOLUME) {
		return nil
	}
	resp, err := s.r.ControllerGetVolume(context.Background(), &csi.ControllerGetVolumeRequest{VolumeId: id})
	Expect(err).NotTo(HaveOccurred(), "ControllerGetVolume %s", id)
	return resp.GetVolume()
}
