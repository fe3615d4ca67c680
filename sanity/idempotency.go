package sanity

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/internal/idempotency"
)

// unknownValue replaces every value of a configured segment to make one
// that names no topology of the driver, as a misspelt zone does: the
// driver's keys, a well-formed value, no such place.
const unknownValue = "zonepath-sanity-no-such-place"

// caseEntry prefixes the report entry of one case; the summary prints it.
const caseEntry = "case: "

// caseRunner runs the cases of internal/idempotency, the table zonepath's
// own driver test runs too, against the driver under test. Places map onto
// the configured segments: A the first, B the second (a wide snapshot's
// other place), C the first the existing object is not usable from, X the
// first with every value replaced by unknownValue.
type caseRunner struct {
	s      *suite
	rpc    idempotency.RPC
	segs   []*csi.Topology
	source string // CreateSnapshot: the source volume, in segs[0]
}

// created is what a create call answered.
type created struct {
	id   string
	topo []*csi.Topology
}

// caseResult is the verdict on one case: the summary's short text, and
// for a failure what the driver said.
type caseResult struct {
	got     codes.Code
	verdict string
	detail  string
	failed  bool
}

func (s *suite) caseRunner(rpc idempotency.RPC) *caseRunner {
	r := &caseRunner{s: s, rpc: rpc, segs: s.needSegments(1)}
	if rpc == idempotency.CreateSnapshot {
		r.source = s.volume("zp-idem-source", r.segs[0]).GetVolumeId()
	}
	return r
}

// runAll runs the cases of the runner's RPC that reuse a name (repeated)
// or make a new object, records each verdict as a report entry, and fails
// the test naming every failed case.
func (r *caseRunner) runAll(repeated bool) {
	GinkgoHelper()
	var failed []string
	n := 0
	for _, k := range idempotency.Cases {
		if k.RPC != r.rpc || k.Repeated() != repeated {
			continue
		}
		n++
		res := r.run(k)
		line := fmt.Sprintf("%s; got %v; accepts %s", res.verdict, res.got, accepted(k))
		AddReportEntry(caseEntry+k.ID, line)
		fmt.Fprintf(GinkgoWriter, "case %s (%s; %s; %s): %s\n", k.ID, k.Object(), k.Request(), k.Clause, line)
		if res.failed {
			failed = append(failed, fmt.Sprintf("%s: %s; %s (%s)", k.ID, res.verdict, res.detail, k.Clause))
		}
	}
	if len(failed) > 0 {
		Fail(fmt.Sprintf("%d of %d cases failed: %s", len(failed), n, strings.Join(failed, "; ")))
	}
}

// accepted lists the answers zonepath-sanity accepts for k.
func accepted(k idempotency.Case) string {
	documented, _ := config().incompatibleCode()
	out := []string{k.Expected(documented).String()}
	for _, c := range k.Also {
		out = append(out, c.String())
	}
	return strings.Join(out, "|")
}

func (r *caseRunner) run(k idempotency.Case) caseResult {
	places := map[idempotency.Place]*csi.Topology{idempotency.A: r.segs[0], idempotency.X: unknownSegment(r.segs[0])}
	params, why := r.params(k, places)
	if why == "" {
		why = r.mutableMissing(k)
	}
	if why != "" {
		return caseResult{verdict: "not exercised: " + why}
	}
	seg := func(x idempotency.Place) *csi.Topology { return places[x] }
	name := sanity.UniqueString("zp-" + strings.ReplaceAll(k.ID, "/", "-"))
	var first created
	if k.Repeated() {
		var err error
		if first, err = r.create(name, params, nil, k.FirstRequirement(seg)); err != nil {
			return caseResult{got: code(err), failed: true, verdict: "FAIL: the first request failed",
				detail: fmt.Sprintf("requisite %s: %v", formatAll(k.FirstRequirement(seg).GetRequisite()), err)}
		}
		if why := r.existing(k, first.topo, places); why != "" {
			return caseResult{verdict: "not exercised: " + why}
		}
	}
	req := k.Requirement(seg)
	got, err := r.create(name, params, r.mutable(k), req)
	return judge(k, first, got, err, places[idempotency.A], known(req.GetRequisite()))
}

// known are the segments of a requisite that name a place of the driver:
// all but the made-up X.
func known(requisite []*csi.Topology) []*csi.Topology {
	return slices.DeleteFunc(slices.Clone(requisite), func(t *csi.Topology) bool {
		return slices.Contains(slices.Collect(maps.Values(t.GetSegments())), unknownValue)
	})
}

// mutableMissing says why a NewMutable case cannot run, or "". Its
// request carries --csi.testvolumemutableparameters, which "SHALL NOT be
// specified unless the SP has the MODIFY_VOLUME plugin capability"
// (CreateVolumeRequest.mutable_parameters).
func (r *caseRunner) mutableMissing(k idempotency.Case) string {
	switch {
	case !k.NewMutable:
		return ""
	case !r.s.d.controllerCapability(csi.ControllerServiceCapability_RPC_MODIFY_VOLUME):
		return "MODIFY_VOLUME not advertised: the driver takes no mutable_parameters"
	case len(r.s.sc.Config.TestVolumeMutableParameters) == 0:
		return "no mutable parameters configured (--csi.testvolumemutableparameters)"
	}
	return ""
}

// mutable is the mutable_parameters of the case's request: for a
// NewMutable case the configured ones, which the first request lacked.
// Any compliant answer is OK with the existing volume; what it shows of
// them (volume_context) is the driver's own and is not checked.
func (r *caseRunner) mutable(k idempotency.Case) map[string]string {
	if !k.NewMutable {
		return nil
	}
	return r.s.sc.Config.TestVolumeMutableParameters
}

// params are the case's snapshot parameters: a wide case needs
// wideSnapshotParameters and a second segment, B.
func (r *caseRunner) params(k idempotency.Case, places map[idempotency.Place]*csi.Topology) (map[string]string, string) {
	if !k.Wide {
		return nil, ""
	}
	wide := config().WideSnapshotParameters
	switch {
	case len(wide) == 0:
		return nil, "no wideSnapshotParameters configured (--zonepath.wide-snapshot-parameters)"
	case len(r.segs) < 2:
		return nil, "needs two configured segments (--zonepath.segment)"
	}
	places[idempotency.B] = r.segs[1]
	return wide, ""
}

// existing checks that the first request made the object the case is
// about, usable from every place of Existing, and finds C: a configured
// segment it is not usable from. It says why the case cannot run, or "".
func (r *caseRunner) existing(k idempotency.Case, topo []*csi.Topology, places map[idempotency.Place]*csi.Topology) string {
	for _, x := range k.Existing {
		if !usableFrom(topo, places[x]) {
			return fmt.Sprintf("the first request made an object usable from %s, not from %s (%s)", usableText(topo), string(x), format(places[x]))
		}
	}
	if !k.Uses(idempotency.C) {
		return ""
	}
	for _, seg := range r.segs {
		if !usableFrom(topo, seg) {
			places[idempotency.C] = seg
			return ""
		}
	}
	return fmt.Sprintf("the object is usable from %s, which covers every configured segment: no place C outside it", usableText(topo))
}

// judge compares the answer with the case. OK must return the existing
// object, or a new one usable from A, the requisite's known place: a new
// object elsewhere ignored the requirement. A repeated request answered
// OK must also return the object usable from the requisite's known places
// (requisite): spec.md CreateSnapshot replies OK for a snapshot "usable
// from `accessibility_requirements`" (CreateVolume: "accessible from"), so
// an OK whose own accessible_topology lies outside the requisite says the
// driver ignored it, whatever code the vendor documents for that case.
func judge(k idempotency.Case, first, got created, err error, a *csi.Topology, requisite []*csi.Topology) caseResult {
	code := code(err)
	documented, _ := config().incompatibleCode()
	ok, other := k.Accepts(code, documented)
	res := caseResult{got: code, verdict: "pass"}
	if other {
		res.verdict = "pass, the other reading"
	}
	switch {
	case !ok:
		res.failed, res.verdict, res.detail = true, "FAIL: not an answer the spec allows", fmt.Sprintf("got %v, want %s", err, accepted(k))
		if err == nil {
			res.detail = fmt.Sprintf("got OK (%s usable from %s), want %s", got.id, usableText(got.topo), accepted(k))
		}
	case code != codes.OK:
	case k.Repeated() && got.id != first.id:
		res.failed, res.verdict, res.detail = true, "FAIL: OK with another object", fmt.Sprintf("%s, not the existing %s", got.id, first.id)
	case k.Repeated() && len(requisite) > 0 && len(got.topo) > 0 && !meetsAny(got.topo, requisite):
		res.failed, res.verdict = true, "FAIL: OK with the existing object, not usable from the requisite"
		res.detail = fmt.Sprintf("%s usable from %s, none of it in the requisite %s", got.id, usableText(got.topo), formatAll(requisite))
	case !k.Repeated() && !usableFrom(got.topo, a):
		res.failed, res.verdict = true, "FAIL: OK with an object placed elsewhere"
		res.detail = fmt.Sprintf("%s usable from %s, not from the requisite's known segment %s", got.id, usableText(got.topo), format(a))
	}
	return res
}

// create makes the runner's call: a volume with mutable, or a snapshot of
// the source with params added to the configured test parameters.
func (r *caseRunner) create(name string, params, mutable map[string]string, req *csi.TopologyRequirement) (created, error) {
	ctx := context.Background()
	if r.rpc == idempotency.CreateVolume {
		vr := sanity.MakeCreateVolumeReq(r.s.sc, name)
		vr.AccessibilityRequirements = req
		vr.MutableParameters = mutable
		resp, err := r.s.r.CreateVolume(ctx, vr)
		return created{resp.GetVolume().GetVolumeId(), resp.GetVolume().GetAccessibleTopology()}, err
	}
	sr := sanity.MakeCreateSnapshotReq(r.s.sc, name, r.source)
	sr.AccessibilityRequirements = req
	if len(params) > 0 {
		merged := maps.Clone(sr.GetParameters())
		if merged == nil {
			merged = map[string]string{}
		}
		maps.Copy(merged, params)
		sr.Parameters = merged
	}
	resp, err := r.s.r.CreateSnapshot(ctx, sr)
	return created{resp.GetSnapshot().GetSnapshotId(), resp.GetSnapshot().GetAccessibleTopology()}, err
}

// unknownSegment has seg's keys, each with unknownValue.
func unknownSegment(seg *csi.Topology) *csi.Topology {
	out := map[string]string{}
	for k := range seg.GetSegments() {
		out[k] = unknownValue
	}
	return &csi.Topology{Segments: out}
}

var _ = describe("Volume topology [zonepath]", []func(*suite){(*suite).needVolumeTopology}, func(s *suite) {
	It("answers the same name with other requirements by the spec's words, case by case (spec.md CreateVolume: OK when accessible from accessibility_requirements; Errors: ALREADY_EXISTS when incompatible with them)", ruleIdempotentVolume, func() {
		s.caseRunner(idempotency.CreateVolume).runAll(true)
	})

	It("answers a requisite naming no topology of the driver with INVALID_ARGUMENT or RESOURCE_EXHAUSTED, saying which, and skips such a segment beside a known one (spec.md General Error Table: Invalid or unsupported field; CreateVolume Errors)", ruleUnknownVolume, func() {
		s.caseRunner(idempotency.CreateVolume).runAll(false)
	})
})
