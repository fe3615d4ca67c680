package plugin_test

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

func tier(t string) map[string]string { return map[string]string{plugin.ParamIOPSTier: t} }

func (c *client) modify(id string, params map[string]string) error {
	_, err := c.ControllerModifyVolume(context.Background(), &csi.ControllerModifyVolumeRequest{VolumeId: id, MutableParameters: params})
	return err
}

// currentTier is the tier ControllerGetVolume and ListVolumes report in
// volume_context; the test fails if they disagree.
func (c *client) currentTier(id string) string {
	c.t.Helper()
	got, err := c.ControllerGetVolume(context.Background(), &csi.ControllerGetVolumeRequest{VolumeId: id})
	if err != nil {
		c.t.Fatalf("ControllerGetVolume %s: %v", id, err)
	}
	list, err := c.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
	if err != nil {
		c.t.Fatalf("ListVolumes: %v", err)
	}
	i := slices.IndexFunc(list.GetEntries(), func(e *csi.ListVolumesResponse_Entry) bool { return e.GetVolume().GetVolumeId() == id })
	if i < 0 {
		c.t.Fatalf("ListVolumes misses %s", id)
	}
	want := got.GetVolume().GetVolumeContext()[plugin.ParamIOPSTier]
	if listed := list.GetEntries()[i].GetVolume().GetVolumeContext()[plugin.ParamIOPSTier]; listed != want {
		c.t.Fatalf("volume %s: ControllerGetVolume says tier %q, ListVolumes %q", id, want, listed)
	}
	return want
}

// TestModifyVolumeErrors: spec.md "ControllerModifyVolume Errors":
// "Parameters not supported | 3 INVALID_ARGUMENT | ... invalid mutable
// parameter keys or values, or the specified volume cannot support the
// specified parameters. The SP MUST NOT have applied any modification";
// "Volume does not exist | 5 NOT_FOUND". volume_id is REQUIRED (General
// Error Table, "Missing required field": INVALID_ARGUMENT); an empty
// mutable_parameters modifies nothing (modify.go says why).
func TestModifyVolumeErrors(t *testing.T) {
	d := newTestDriver(t, nil)
	vol := d.mustCreateVolume(drivertest.VolumeRequest("modify-errors", gib, nil)).GetVolumeId()
	modify := func(id string, params map[string]string) func() error {
		return func() error { return d.modify(id, params) }
	}
	runCodeCases(t, []codeCase{
		{"no volume_id", modify("", tier(plugin.TierPremium)), codes.InvalidArgument},
		{"malformed volume_id", modify("../etc", tier(plugin.TierPremium)), codes.InvalidArgument},
		{"unknown volume", modify("zpv-0000000000000000ffffffff", tier(plugin.TierPremium)), codes.NotFound},
		{"no mutable_parameters: nothing to modify", modify(vol, nil), codes.OK},
		{"no mutable_parameters, unknown volume", modify("zpv-0000000000000000ffffffff", nil), codes.NotFound},
		{"unknown key", modify(vol, map[string]string{"XXX_FakeKey": "XXX_FakeValue"}), codes.InvalidArgument},
		{"unknown key in the driver's prefix", modify(vol, map[string]string{plugin.DefaultName + "/iopstier": "premium"}), codes.InvalidArgument},
		{"CO-prefixed key", modify(vol, map[string]string{"csi.storage.k8s.io/pvc/name": "claim"}), codes.InvalidArgument},
		{"unknown tier", modify(vol, tier("ludicrous")), codes.InvalidArgument},
		{"control character", modify(vol, tier("premium\x00")), codes.InvalidArgument},
		{"immutable encryption", modify(vol, map[string]string{plugin.ParamEncryption: "aes-256"}), codes.InvalidArgument},
		{"valid tier with immutable encryption", modify(vol, map[string]string{plugin.ParamIOPSTier: plugin.TierExtreme, plugin.ParamEncryption: "none"}), codes.InvalidArgument},
		{"unknown volume with a bad key is the request's fault first", modify("zpv-0000000000000000ffffffff", map[string]string{"XXX_FakeKey": "x"}), codes.InvalidArgument},
	})
	if got := d.currentTier(vol); got != plugin.TierStandard {
		t.Fatalf("refused modifications changed the tier to %q; the SP MUST NOT have applied any modification", got)
	}
}

// TestModifyVolumeTier: the tier a volume is created with follows
// CreateVolume's "Values specified in mutable_parameters MUST take
// precedence over the values from parameters"; ControllerModifyVolume
// changes it durably, "MUST be idempotent", and only keys that are
// specified modify the volume.
func TestModifyVolumeTier(t *testing.T) {
	d := newTestDriver(t, nil)
	create := func(name string, params, mutable map[string]string) string {
		req := drivertest.VolumeRequest(name, gib, nil)
		req.Parameters, req.MutableParameters = params, mutable
		return d.mustCreateVolume(req).GetVolumeId()
	}
	plain := create("tier-plain", nil, nil)
	fromClass := create("tier-class", tier(plugin.TierPremium), nil)
	overridden := create("tier-vac", tier(plugin.TierPremium), tier(plugin.TierExtreme))
	encrypted := create("tier-encrypted", map[string]string{plugin.ParamEncryption: "aes-256"}, tier(plugin.TierPremium))
	for _, tc := range []struct {
		id, want string
	}{
		{plain, plugin.TierStandard}, {fromClass, plugin.TierPremium}, {overridden, plugin.TierExtreme}, {encrypted, plugin.TierPremium},
	} {
		if got := d.currentTier(tc.id); got != tc.want {
			t.Errorf("volume %s created with tier %q, want %q", tc.id, got, tc.want)
		}
	}
	steps := []struct {
		id, to string
	}{
		{plain, plugin.TierExtreme}, {plain, plugin.TierExtreme}, // idempotent
		{fromClass, plugin.TierStandard}, {overridden, plugin.TierPremium}, {encrypted, plugin.TierStandard},
	}
	for _, s := range steps {
		if err := d.modify(s.id, tier(s.to)); err != nil {
			t.Fatalf("modify %s to %s: %v", s.id, s.to, err)
		}
		if got := d.currentTier(s.id); got != s.to {
			t.Fatalf("volume %s after modify to %s reports %q", s.id, s.to, got)
		}
	}
	d.restart(t)
	if got := d.currentTier(plain); got != plugin.TierExtreme {
		t.Fatalf("after a restart volume %s reports tier %q, want %s: the modification was not stored", plain, got, plugin.TierExtreme)
	}
}

// TestCreateVolumeMutableParameters: CreateVolume validates
// mutable_parameters like ControllerModifyVolume (csi-sanity: "should
// not create volume with an invalid volume attribute class" wants
// INVALID_ARGUMENT). A retry of the name with other, valid ones gets 0 OK
// with the volume, modified to them: it must be "compatible with the
// specified ... mutable_parameters" (spec.md CreateVolume), and the
// ALREADY_EXISTS row of CreateVolume Errors does not list them, since a
// volume takes new ones in place (a provisioner's retry after the user
// changed the claim's VolumeAttributesClass). Invalid ones stay
// INVALID_ARGUMENT and change nothing.
func TestCreateVolumeMutableParameters(t *testing.T) {
	d := newTestDriver(t, nil)
	create := func(name string, params, mutable map[string]string) func() error {
		req := drivertest.VolumeRequest(name, gib, nil)
		req.Parameters, req.MutableParameters = params, mutable
		return errOf(d.CreateVolume, req)
	}
	runCodeCases(t, []codeCase{
		{"unknown mutable key", create("m-1", nil, map[string]string{"XXX_FakeKey": "XXX_FakeValue"}), codes.InvalidArgument},
		{"unknown tier", create("m-2", nil, tier("fast")), codes.InvalidArgument},
		{"encryption is not mutable", create("m-3", nil, map[string]string{plugin.ParamEncryption: "aes-256"}), codes.InvalidArgument},
		{"unknown tier in parameters", create("m-4", tier("fast"), nil), codes.InvalidArgument},
		{"unknown encryption", create("m-5", map[string]string{plugin.ParamEncryption: "rot13"}, nil), codes.InvalidArgument},
		{"tier and encryption", create("m-6", map[string]string{plugin.ParamEncryption: "aes-256"}, tier(plugin.TierExtreme)), codes.OK},
		{"same again", create("m-6", map[string]string{plugin.ParamEncryption: "aes-256"}, tier(plugin.TierExtreme)), codes.OK},
		{"same name, other tier", create("m-6", map[string]string{plugin.ParamEncryption: "aes-256"}, tier(plugin.TierStandard)), codes.OK},
		{"same name, no mutable parameters", create("m-6", map[string]string{plugin.ParamEncryption: "aes-256"}, nil), codes.OK},
		{"same name, unknown tier", create("m-6", map[string]string{plugin.ParamEncryption: "aes-256"}, tier("fast")), codes.InvalidArgument},
		{"same name, encryption as mutable", create("m-6", nil, map[string]string{plugin.ParamEncryption: "none"}), codes.InvalidArgument},
		{"same name, other parameters", create("m-6", nil, tier(plugin.TierExtreme)), codes.AlreadyExists},
	})
	if files := d.dataFiles(t); len(files) != 1 {
		t.Fatalf("data files %v, want only that of m-6: refused requests left data behind", files)
	}
	list, err := d.ListVolumes(context.Background(), &csi.ListVolumesRequest{})
	if err != nil || len(list.GetEntries()) != 1 {
		t.Fatalf("ListVolumes = %v, %v; want m-6 alone", list, err)
	}
	// The retry with standard modified it; the refused ones did not.
	if got := d.currentTier(list.GetEntries()[0].GetVolume().GetVolumeId()); got != plugin.TierStandard {
		t.Fatalf("m-6 is tier %q, want %s, as the retry with other mutable_parameters set it", got, plugin.TierStandard)
	}
}

// TestCreateVolumeRetryNewClass is the trigger of issue 35's item 3: a
// claim of VolumeAttributesClass "silver" (tier premium) whose
// CreateVolume made the volume but timed out; the user switches the
// pending claim to "gold" (tier extreme) and the provisioner's retry
// carries it. The answer is OK with the same volume, now extreme, and
// what the retry returns is what ControllerGetVolume shows.
func TestCreateVolumeRetryNewClass(t *testing.T) {
	d := newTestDriver(t, nil)
	req := drivertest.VolumeRequest("claim-1", gib, nil)
	req.MutableParameters = tier(plugin.TierPremium)
	first := d.mustCreateVolume(req)
	req.MutableParameters = tier(plugin.TierExtreme)
	retry, err := d.CreateVolume(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateVolume retried with the claim's new class: %v, want OK (spec.md CreateVolume: compatible with mutable_parameters; not in the ALREADY_EXISTS row)", err)
	}
	if retry.GetVolume().GetVolumeId() != first.GetVolumeId() {
		t.Fatalf("retry made %s, want the existing %s", retry.GetVolume().GetVolumeId(), first.GetVolumeId())
	}
	if got, ctx := d.currentTier(first.GetVolumeId()), retry.GetVolume().GetVolumeContext()[plugin.ParamIOPSTier]; got != plugin.TierExtreme || ctx != got {
		t.Fatalf("after the retry the volume is tier %q (the retry said %q), want %s", got, ctx, plugin.TierExtreme)
	}
}

// TestModifyVolumeSwitchedOff: without MODIFY_VOLUME the driver plays one
// whose volumes never change: the capability is not reported,
// mutable_parameters "SHALL NOT be specified unless the SP has the
// MODIFY_VOLUME plugin capability" (CreateVolumeRequest), so they are
// INVALID_ARGUMENT, and the RPC is UNIMPLEMENTED.
func TestModifyVolumeSwitchedOff(t *testing.T) {
	for _, off := range []bool{false, true} {
		d := newTestDriver(t, func(c *plugin.Config) { c.DisableModifyVolume = off })
		caps, err := d.ControllerGetCapabilities(context.Background(), &csi.ControllerGetCapabilitiesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		has := slices.ContainsFunc(caps.GetCapabilities(), func(c *csi.ControllerServiceCapability) bool {
			return c.GetRpc().GetType() == csi.ControllerServiceCapability_RPC_MODIFY_VOLUME
		})
		if has == off {
			t.Fatalf("DisableModifyVolume=%v: MODIFY_VOLUME reported %v", off, has)
		}
		req := drivertest.VolumeRequest("switch", gib, nil)
		req.MutableParameters = tier(plugin.TierPremium)
		_, createErr := d.CreateVolume(context.Background(), req)
		vol := d.mustCreateVolume(drivertest.VolumeRequest("switch-plain", gib, nil)).GetVolumeId()
		modifyErr := d.modify(vol, tier(plugin.TierPremium))
		wantCreate, wantModify := codes.OK, codes.OK
		if off {
			wantCreate, wantModify = codes.InvalidArgument, codes.Unimplemented
		}
		if codeOf(createErr) != wantCreate || codeOf(modifyErr) != wantModify {
			t.Fatalf("DisableModifyVolume=%v: CreateVolume with mutable_parameters %v, ControllerModifyVolume %v; want %v, %v", off, createErr, modifyErr, wantCreate, wantModify)
		}
	}
}

// TestValidateMutableParameters: ValidateVolumeCapabilities' confirmed
// "SHALL only be set if all the volume capabilities and parameters
// specified in the request are supported", mutable_parameters among them
// (ValidateVolumeCapabilitiesRequest.mutable_parameters, "See
// CreateVolumeRequest.mutable_parameters").
func TestValidateMutableParameters(t *testing.T) {
	d := newTestDriver(t, nil)
	vol := d.mustCreateVolume(drivertest.VolumeRequest("validate-mutable", gib, nil)).GetVolumeId()
	for _, tc := range []struct {
		name      string
		mutable   map[string]string
		confirmed bool
	}{
		{"a known tier", tier(plugin.TierExtreme), true},
		{"an unknown tier", tier("warp"), false},
		{"encryption is not mutable", map[string]string{plugin.ParamEncryption: "aes-256"}, false},
		{"an unknown key", map[string]string{"XXX_FakeKey": "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := d.ValidateVolumeCapabilities(context.Background(), &csi.ValidateVolumeCapabilitiesRequest{
				VolumeId: vol, VolumeCapabilities: []*csi.VolumeCapability{drivertest.MountCapability()}, MutableParameters: tc.mutable,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetConfirmed() != nil; got != tc.confirmed || (!got && resp.GetMessage() == "") {
				t.Fatalf("confirmed %v (message %q), want %v", resp.GetConfirmed(), resp.GetMessage(), tc.confirmed)
			}
			if tc.confirmed && !maps.Equal(resp.GetConfirmed().GetMutableParameters(), tc.mutable) {
				t.Fatalf("confirmed mutable_parameters %v, want %v", resp.GetConfirmed().GetMutableParameters(), tc.mutable)
			}
		})
	}
}
