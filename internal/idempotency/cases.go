package idempotency

import (
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// RPC is the call a case makes.
type RPC string

// The calls whose name reuse meets topology requirements.
const (
	CreateSnapshot RPC = "CreateSnapshot"
	CreateVolume   RPC = "CreateVolume"
)

// Place is a topology segment of a case, named by its role.
type Place string

// The places a case may name.
const (
	// A is where the first request asked for: the existing object is
	// usable (a volume: accessible) from it.
	A Place = "A"
	// B is a second place the existing object is usable from: a wide
	// snapshot's other place, beyond a requisite naming only A.
	B Place = "B"
	// C is a place the driver can satisfy, from which the existing object
	// is not usable.
	C Place = "C"
	// X is a well-formed segment with the driver's keys that names no
	// topology of the driver: a misspelt zone.
	X Place = "X"
)

// Case is one request and the answer the spec calls for.
type Case struct {
	// ID names the case in test names, fault rules and the README table.
	ID  string
	RPC RPC
	// First is the requisite of the request that made the object the
	// case reuses the name of; nil: no object of the name exists yet.
	First []Place
	// Wide: the first request asks for a snapshot usable from every place
	// of First (zonepath: snapshotCopies or snapshotScope=region;
	// zonepath-sanity: its wideSnapshotParameters).
	Wide bool
	// Existing is where that object is usable from (nil: none exists).
	Existing []Place
	// Requisite and Preferred are the request's accessibility_requirements;
	// both nil: it has none. A repeated request is otherwise the first.
	Requisite, Preferred []Place
	// Clause is the spec's words (spec.md, CSI v1.13.0) behind Want.
	Clause string
	// Want is zonepath's answer. With OK, a repeated request returns the
	// existing object, and a first request an object usable from a
	// requisite place other than X.
	Want codes.Code
	// Documented: the spec names no code here. Want is the code zonepath
	// documents; zonepath-sanity expects the one the vendor documents
	// (--zonepath.incompatible-requirements).
	Documented bool
	// Also are other answers the spec leaves defensible: zonepath-sanity
	// accepts them and reports which it saw.
	Also []codes.Code
	// NewMutable: the first request has no mutable_parameters and the
	// repeated one has some (the runner's: zonepath's driver test a tier,
	// zonepath-sanity --csi.testvolumemutableparameters), as a provisioner's
	// retry of a CreateVolume that timed out carries the VolumeAttributesClass
	// the user gave the claim meanwhile. It needs MODIFY_VOLUME (a driver
	// without it "SHALL NOT" be sent mutable_parameters), and an OK need
	// not show the values anywhere: volume_context is the driver's own.
	NewMutable bool
}

// The spec's words the cases cite.
const (
	snapshotOK = `CreateSnapshot: a snapshot of the name "successfully cut and ready to use ..., and is usable from ` +
		"`accessibility_requirements`" + `, the Plugin MUST reply 0 OK"`
	volumeOK = `CreateVolume: a volume of the name that "already exists, is accessible from ` +
		"`accessibility_requirements`" + `, and is compatible ..., the Plugin MUST reply 0 OK"`
	atLeastOne = `TopologyRequirement.requisite: "MUST be accessible from at least one of the requisite topologies"`
	beyond     = `TopologyRequirement.requisite, x > n: the SP "MAY choose the remaining x-n unique topologies from the list of all possible topologies"`
	unknown    = "General Error Table: INVALID_ARGUMENT, \"Invalid or unsupported field in the request ... has an invalid value\": " +
		"`accessibility_requirements`: \"COs SHALL only specify topological accessibility information supported by the SP\"; " +
		"the RESOURCE_EXHAUSTED rows need a field that \"is valid\""
	// newMutable is why a volume with other mutable parameters is
	// compatible.
	newMutable = volumeOK + "; it must be compatible with `capacity_range`, `volume_capabilities`, `parameters` and `mutable_parameters`, " +
		`and CreateVolume Errors' ALREADY_EXISTS row lists "` + "`capacity_range`, `volume_capabilities`, `parameters`, `accessibility_requirements` or `volume_content_source`" +
		`", not ` + "`mutable_parameters`" + `: a volume takes new ones in place (ControllerModifyVolume), so the retry gets OK with the volume`
	skipUnknown = atLeastOne + "; a segment naming no topology beside one that does is skipped (INVALID_ARGUMENT for the whole field is the other reading)"
)

// Cases is the table. Each ID is unique; places are mapped by the runner.
var Cases = slices.Concat(snapshotCases, unknownCases(CreateSnapshot, "snapshot", snapshotOK), unknownPreferred,
	volumeCases, unknownCases(CreateVolume, "volume", volumeOK))

var snapshotCases = []Case{
	{ID: "snapshot/same-requisite", RPC: CreateSnapshot, First: p(A), Existing: p(A), Requisite: p(A),
		Clause: snapshotOK, Want: codes.OK},
	{ID: "snapshot/usable-beyond-requisite", RPC: CreateSnapshot, First: p(A, B), Wide: true, Existing: p(A, B), Requisite: p(A),
		Clause: snapshotOK + "; " + beyond, Want: codes.OK},
	{ID: "snapshot/requisite-is-its-other-place", RPC: CreateSnapshot, First: p(A, B), Wide: true, Existing: p(A, B), Requisite: p(B),
		Clause: snapshotOK + "; " + beyond, Want: codes.OK},
	{ID: "snapshot/wider-requisite", RPC: CreateSnapshot, First: p(A), Existing: p(A), Requisite: p(A, C),
		Clause: snapshotOK + "; " + atLeastOne + `; x < n: the SP "SHALL choose x unique topologies from the list of requisite topologies"`, Want: codes.OK},
	{ID: "snapshot/preferred-elsewhere", RPC: CreateSnapshot, First: p(A), Existing: p(A), Requisite: p(A, C), Preferred: p(C),
		Clause: snapshotOK + `; TopologyRequirement.preferred orders attempts ("SHOULD first attempt"), requisite says where it MUST be usable from`, Want: codes.OK},
	{ID: "snapshot/no-requirements", RPC: CreateSnapshot, First: p(A), Existing: p(A),
		Clause: snapshotOK + `; CreateSnapshotRequest.accessibility_requirements: "If this field is not specified ..., the SP MAY choose where the provisioned snapshot is usable from"`, Want: codes.OK},
	{ID: "snapshot/requisite-outside", RPC: CreateSnapshot, First: p(A), Existing: p(A), Requisite: p(C),
		Clause: "OK only when " + `"usable from` + " `accessibility_requirements`\" (CreateSnapshot), and CreateSnapshot Errors name no code for it " +
			"(their ALREADY_EXISTS row is about `volume_id`): zonepath answers ALREADY_EXISTS, as CreateVolume Errors do for " +
			`"incompatible with ... ` + "`accessibility_requirements`\"",
		Want: codes.AlreadyExists, Documented: true},
}

var unknownPreferred = []Case{
	{ID: "snapshot/new-unknown-preferred", RPC: CreateSnapshot, Requisite: p(A), Preferred: p(X, A),
		Clause: `TopologyRequirement.preferred is a hint ("SHOULD first attempt"); a preferred segment naming no topology is skipped ` +
			`(INVALID_ARGUMENT is the other reading: preferred topologies "MUST also be present in the list of requisite topologies")`,
		Want: codes.OK, Also: c(codes.InvalidArgument)},
}

var volumeCases = []Case{
	{ID: "volume/same-requisite", RPC: CreateVolume, First: p(A), Existing: p(A), Requisite: p(A),
		Clause: volumeOK, Want: codes.OK},
	{ID: "volume/wider-requisite", RPC: CreateVolume, First: p(A), Existing: p(A), Requisite: p(A, C),
		Clause: volumeOK + "; " + atLeastOne, Want: codes.OK},
	{ID: "volume/no-requirements", RPC: CreateVolume, First: p(A), Existing: p(A),
		Clause: volumeOK + `; CreateVolumeRequest.accessibility_requirements: "If this field is not specified ..., the SP MAY choose where the provisioned volume is accessible from"`, Want: codes.OK},
	{ID: "volume/retry-other-mutable-parameters", RPC: CreateVolume, First: p(A), Existing: p(A), Requisite: p(A), NewMutable: true,
		Clause: newMutable, Want: codes.OK},
	{ID: "volume/requisite-outside", RPC: CreateVolume, First: p(A), Existing: p(A), Requisite: p(C),
		Clause: `CreateVolume Errors: ALREADY_EXISTS, "Volume already exists but is incompatible with the specified ... ` + "`accessibility_requirements`\"",
		Want:   codes.AlreadyExists},
}

// unknownCases are the cases of a requisite naming a place the driver does
// not have, the same for both RPCs; reuseOK is the RPC's idempotency clause.
func unknownCases(rpc RPC, kind, reuseOK string) []Case {
	const checkedFirst = "; the request is checked before the name is looked up (ALREADY_EXISTS, if the name is looked up first)"
	return []Case{
		{ID: kind + "/requisite-with-unknown-place", RPC: rpc, First: p(A), Existing: p(A), Requisite: p(A, X),
			Clause: reuseOK + "; " + skipUnknown, Want: codes.OK, Also: c(codes.InvalidArgument)},
		{ID: kind + "/requisite-only-unknown", RPC: rpc, First: p(A), Existing: p(A), Requisite: p(X),
			Clause: unknown + checkedFirst, Want: codes.InvalidArgument, Also: c(codes.ResourceExhausted, codes.AlreadyExists)},
		{ID: kind + "/new-unknown-requisite", RPC: rpc, Requisite: p(X),
			Clause: unknown, Want: codes.InvalidArgument, Also: c(codes.ResourceExhausted)},
		{ID: kind + "/new-requisite-with-unknown-place", RPC: rpc, Requisite: p(A, X),
			Clause: skipUnknown, Want: codes.OK, Also: c(codes.InvalidArgument)},
	}
}

func p(places ...Place) []Place            { return places }
func c(answers ...codes.Code) []codes.Code { return answers }

// Repeated reports whether the case reuses the name of an existing object.
func (k Case) Repeated() bool { return k.First != nil }

// Uses reports whether the case names place x anywhere.
func (k Case) Uses(x Place) bool {
	for _, l := range [][]Place{k.First, k.Existing, k.Requisite, k.Preferred} {
		if slices.Contains(l, x) {
			return true
		}
	}
	return false
}

// Requirement is the case's accessibility_requirements with each place
// mapped to a segment by seg; nil when the case has none.
func (k Case) Requirement(seg func(Place) *csi.Topology) *csi.TopologyRequirement {
	if k.Requisite == nil && k.Preferred == nil {
		return nil
	}
	return &csi.TopologyRequirement{Requisite: segments(k.Requisite, seg), Preferred: segments(k.Preferred, seg)}
}

// FirstRequirement is the requirement of the request that made the
// existing object: requisite First, nothing preferred.
func (k Case) FirstRequirement(seg func(Place) *csi.Topology) *csi.TopologyRequirement {
	return &csi.TopologyRequirement{Requisite: segments(k.First, seg)}
}

func segments(places []Place, seg func(Place) *csi.Topology) []*csi.Topology {
	if places == nil {
		return nil
	}
	out := make([]*csi.Topology, len(places))
	for i, x := range places {
		out[i] = seg(x)
	}
	return out
}

// Accepts judges an answer. documented is the code the driver documents
// for a Documented case (zonepath: ALREADY_EXISTS). It reports whether
// got is acceptable, and whether it is the other reading (one of Also).
func (k Case) Accepts(got, documented codes.Code) (ok, other bool) {
	if got == k.Expected(documented) {
		return true, false
	}
	return slices.Contains(k.Also, got), slices.Contains(k.Also, got)
}

// Expected is Want, or documented for a Documented case.
func (k Case) Expected(documented codes.Code) codes.Code {
	if k.Documented {
		return documented
	}
	return k.Want
}

// Object says what exists before the request: "none", or the object and
// the places it is usable from ("snapshot usable from A, B").
func (k Case) Object() string {
	if !k.Repeated() {
		return "none"
	}
	kind, how := "snapshot", "usable"
	if k.RPC == CreateVolume {
		kind, how = "volume", "accessible"
	}
	return kind + " " + how + " from " + join(k.Existing)
}

// Request describes the request's requirement ("requisite A, C; preferred C").
func (k Case) Request() string {
	var parts []string
	if k.Requisite != nil {
		parts = append(parts, "requisite "+join(k.Requisite))
	}
	if k.Preferred != nil {
		parts = append(parts, "preferred "+join(k.Preferred))
	}
	if parts == nil {
		parts = append(parts, "no requirements")
	}
	if k.NewMutable {
		parts = append(parts, "mutable_parameters the first request had not")
	}
	return strings.Join(parts, "; ")
}

func join(places []Place) string {
	s := make([]string, len(places))
	for i, x := range places {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}
