package plugin

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// Volume parameters, and which of them may change after creation.
//
// ParamIOPSTier is the volume's performance tier, a zone's pool of disks
// of one speed. It is mutable: a StorageClass may give it in parameters,
// a VolumeAttributesClass in mutable_parameters (which "MUST take
// precedence over the values from parameters", spec.md CreateVolume), and
// ControllerModifyVolume changes it in place, as a cloud disk changes its
// provisioned IOPS without moving.
//
// ParamEncryption says whether the volume's data is encrypted at rest. It
// is set at creation (parameters only): a volume cannot be re-encrypted in
// place, so in mutable_parameters it is refused with INVALID_ARGUMENT,
// "the specified volume cannot support the specified parameters"
// (spec.md, ControllerModifyVolume Errors).
const (
	ParamIOPSTier   = paramPrefix + "iopsTier"
	ParamEncryption = paramPrefix + "encryption"
)

// IOPS tiers, slowest first; TierStandard is that of a volume that names
// none.
const (
	TierStandard = "standard"
	TierPremium  = "premium"
	TierExtreme  = "extreme"
)

var (
	iopsTiers        = []string{TierStandard, TierPremium, TierExtreme}
	encryptionValues = []string{"none", "aes-256"}
	// volumeParameters are the keys CreateVolume (and GetCapacity,
	// ValidateVolumeCapabilities) know in parameters.
	volumeParameters = []string{ParamIOPSTier, ParamEncryption}
)

// CapModifyVolume is the controller capability DisableCapabilities can
// switch off: without it the driver plays one whose volumes never change
// after creation (CreateVolume refuses mutable_parameters, and
// ControllerModifyVolume is UNIMPLEMENTED).
const CapModifyVolume = "MODIFY_VOLUME"

func (p *Plugin) modifyVolume() bool { return p.controllerService() && !p.cfg.DisableModifyVolume }

// controllerCapabilities are controllerRPCs and the switchable ones that
// are on.
func (p *Plugin) controllerCapabilities() []csi.ControllerServiceCapability_RPC_Type {
	out := slices.Clone(controllerRPCs)
	if p.modifyVolume() {
		out = append(out, csi.ControllerServiceCapability_RPC_MODIFY_VOLUME)
	}
	return out
}

// checkVolumeParameters validates CreateVolume's parameters: the known
// keys with known values, unknown keys in the driver's prefix refused by
// checkParameters.
func checkVolumeParameters(params map[string]string) error {
	if err := checkParameters(params, volumeParameters...); err != nil {
		return err
	}
	if err := checkValue(params, ParamIOPSTier, iopsTiers); err != nil {
		return err
	}
	return checkValue(params, ParamEncryption, encryptionValues)
}

// checkMutableParameters validates mutable_parameters, of CreateVolume or
// ControllerModifyVolume. Unlike parameters, where a CO adds keys of its
// own (csi.storage.k8s.io/...), every key here comes from the user's
// VolumeAttributesClass and is the driver's to understand: an unknown key
// of any prefix is INVALID_ARGUMENT ("invalid mutable parameter keys or
// values", ControllerModifyVolume Errors), so that a misspelt class
// fails instead of silently doing nothing.
func checkMutableParameters(params map[string]string) error {
	if err := checkMap("mutable_parameters", params); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		switch k {
		case ParamIOPSTier:
		case ParamEncryption:
			return status.Errorf(codes.InvalidArgument, "mutable_parameters: %s is set at creation and cannot change in place: the volume cannot support it (StorageClass parameters, not a VolumeAttributesClass)", k)
		default:
			return status.Errorf(codes.InvalidArgument, "mutable_parameters: unknown key %q: the only mutable parameter is %s", truncate(k), ParamIOPSTier)
		}
	}
	return checkValue(params, ParamIOPSTier, iopsTiers)
}

func checkValue(params map[string]string, key string, values []string) error {
	v, ok := params[key]
	if !ok || slices.Contains(values, v) {
		return nil
	}
	return status.Errorf(codes.InvalidArgument, "%s %q is not one of %s", key, truncate(v), strings.Join(values, ", "))
}

// checkCreateMutable validates CreateVolume's mutable_parameters, which
// "SHALL NOT be specified unless the SP has the MODIFY_VOLUME plugin
// capability" (CreateVolumeRequest.mutable_parameters).
func (p *Plugin) checkCreateMutable(params map[string]string) error {
	if len(params) > 0 && !p.modifyVolume() {
		return status.Error(codes.InvalidArgument, "mutable_parameters: this driver does not advertise MODIFY_VOLUME")
	}
	return checkMutableParameters(params)
}

// iopsTier is a volume's current tier: its mutable parameters', else its
// parameters', else standard.
func iopsTier(v *state.Volume) string {
	if t, ok := v.MutableParameters[ParamIOPSTier]; ok {
		return t
	}
	if t, ok := v.Parameters[ParamIOPSTier]; ok {
		return t
	}
	return TierStandard
}

// volumeContext is what csi.Volume.volume_context carries: the volume's
// current tier, so that ControllerGetVolume and ListVolumes show a
// modification. The copy a CO keeps from CreateVolume (a PV's
// volumeAttributes) shows the tier of creation.
func volumeContext(v *state.Volume) map[string]string {
	return map[string]string{ParamIOPSTier: iopsTier(v)}
}

// ControllerModifyVolume implements csi.ControllerServer: it sets the
// given mutable parameters and leaves the others as they are ("SPs MUST
// NOT modify volumes based on the absence of keys"). Idempotent: setting
// the current values changes nothing and succeeds. A refused request
// changes nothing ("The SP MUST NOT have applied any modification to the
// volume as part of this specific call"): everything is checked before
// the one store update.
func (p *Plugin) ControllerModifyVolume(ctx context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	if !p.modifyVolume() {
		return nil, status.Error(codes.Unimplemented, "ControllerModifyVolume: this driver does not advertise MODIFY_VOLUME")
	}
	id := req.GetVolumeId()
	if err := checkID("volume_id", id); err != nil {
		return nil, err
	}
	// mutable_parameters is REQUIRED, but proto3 cannot tell an absent
	// map from an empty one, and an empty one names nothing to modify:
	// like csi-driver-host-path and as csi-sanity run without
	// -csi.testvolumemutableparameters expects, it is a modification of
	// nothing, which succeeds for an existing volume.
	if err := checkMutableParameters(req.GetMutableParameters()); err != nil {
		return nil, err
	}
	err := p.store.Update(func(tx *state.Tx) error {
		v := tx.Volume(id)
		if v == nil {
			return status.Errorf(codes.NotFound, "volume %s does not exist", id)
		}
		_, err := p.setMutable(tx, v, req.GetMutableParameters())
		return err
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}

// setMutable sets the given (validated) mutable parameters on v inside
// tx, leaving the others as they are, and returns the volume as it now
// is. ControllerModifyVolume and a CreateVolume retried with other
// mutable parameters (volumes.go, reuseVolume) both change a volume here.
//
// Setting the current values changes nothing and succeeds wherever the
// volume is, as ControllerExpandVolume does for a size already reached. A
// change in a zone that is down is UNAVAILABLE (outage.go): nothing there
// changes while it is down, and the CO retries with backoff ("The SP MUST
// NOT have applied any modification to the volume as part of this
// specific call", ControllerModifyVolume Errors, holds for any error).
func (p *Plugin) setMutable(tx *state.Tx, v *state.Volume, params map[string]string) (*state.Volume, error) {
	merged := maps.Clone(v.MutableParameters)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, params)
	if maps.Equal(merged, v.MutableParameters) {
		return v, nil
	}
	if err := p.volumeReachable(v); err != nil {
		return nil, err
	}
	modified := *v
	modified.MutableParameters = merged
	tx.PutVolume(&modified)
	return &modified, nil
}
