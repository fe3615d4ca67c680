package snapshotter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clienttesting "k8s.io/client-go/testing"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

const snapName = "snapshot-uid-1"

type createCase struct {
	name          string
	gate          bool
	accessibility bool
	extraMetadata bool
	allowed       []v1.TopologySelectorTerm // class allowedTopologies; nil: none
	existing      []v1.TopologySelectorTerm // content nodeAffinity; nil: none
	otherVolume   bool                      // the content names another volume
	failGet       string                    // resource whose GETs fail with an API-server error
	pin           *string                   // the content's pin annotation; nil: none
	driverTopo    []*csi.Topology
	driverErr     error

	wantReq []v1.TopologySelectorTerm // terms the requirement is built from; nil: none
	// wantCode of the returned error; OK: success. Unknown: a plain
	// error, no gRPC status, which upstream's isCSIFinalError counts as
	// not final (it keeps the being-created annotation).
	wantCode     codes.Code
	wantErrText  string                    // substring of the returned error
	wantCalls    int                       // CreateSnapshot calls reaching the driver
	wantAffinity []v1.TopologySelectorTerm // content nodeAffinity afterwards
	wantPatches  int                       // of nodeAffinity
	// wantPinned: the content has a pin afterwards, holding wantReq, and
	// wantPinPatches wrote it.
	wantPinned     bool
	wantPinPatches int
	wantNoAPI      bool // no API request at all
}

func TestCreateSnapshot(t *testing.T) {
	r1a, r1b, r2b := segment(regionKey, "r1", zoneKey, "a"), segment(regionKey, "r1", zoneKey, "b"), segment(regionKey, "r2", zoneKey, "b")
	allowedR1 := []v1.TopologySelectorTerm{term(regionKey, "r1", zoneKey, "a", zoneKey, "b")}
	admin := []v1.TopologySelectorTerm{term(zoneKey, "z-admin")}
	cases := []createCase{
		{name: "class allowedTopologies become requisite and preferred; answer recorded",
			gate: true, accessibility: true, allowed: allowedR1, driverTopo: []*csi.Topology{r1b},
			wantReq: allowedR1, wantCalls: 1, wantAffinity: []v1.TopologySelectorTerm{term(regionKey, "r1", zoneKey, "b")}, wantPatches: 1, wantPinned: true, wantPinPatches: 1},
		{name: "class without allowedTopologies: no requirement, multi-segment answer recorded losslessly",
			gate: true, accessibility: true, driverTopo: []*csi.Topology{r1a, r2b},
			wantCalls: 1, wantAffinity: []v1.TopologySelectorTerm{term(regionKey, "r1", zoneKey, "a"), term(regionKey, "r2", zoneKey, "b")}, wantPatches: 1,
			wantPinned: true, wantPinPatches: 1},
		{name: "capability absent: no requirement, nothing recorded, no API calls",
			gate: true, allowed: allowedR1, driverTopo: []*csi.Topology{r1a},
			wantCalls: 1, wantNoAPI: true},
		{name: "gate off: no requirement, existing nodeAffinity untouched, no API calls",
			accessibility: true, allowed: allowedR1, existing: admin, driverTopo: []*csi.Topology{r1a},
			wantCalls: 1, wantAffinity: admin, wantNoAPI: true},
		{name: "gate off without nodeAffinity: none written",
			accessibility: true, allowed: allowedR1, driverTopo: []*csi.Topology{r1a},
			wantCalls: 1, wantNoAPI: true},
		{name: "existing nodeAffinity is not overwritten",
			gate: true, accessibility: true, existing: admin, driverTopo: []*csi.Topology{r1a},
			wantCalls: 1, wantAffinity: admin, wantPinned: true, wantPinPatches: 1},
		{name: "empty accessible_topology: nothing written",
			gate: true, accessibility: true, allowed: allowedR1,
			wantReq: allowedR1, wantCalls: 1, wantPinned: true, wantPinPatches: 1},
		{name: "RESOURCE_EXHAUSTED: returned as is, nothing written",
			gate: true, accessibility: true, allowed: allowedR1, driverErr: status.Error(codes.ResourceExhausted, "zone quota exceeded in r1/a and r1/b"),
			wantReq: allowedR1, wantCode: codes.ResourceExhausted, wantErrText: "zone quota exceeded in r1/a and r1/b", wantCalls: 1,
			wantPinned: true, wantPinPatches: 1},
		{name: "a pin is reused: the class is not read, the pin not written again",
			gate: true, accessibility: true, allowed: []v1.TopologySelectorTerm{term(regionKey, "r2")}, pin: ptr(pinOf(t, allowedR1)), driverTopo: []*csi.Topology{r1a},
			wantReq: allowedR1, wantCalls: 1, wantAffinity: []v1.TopologySelectorTerm{term(regionKey, "r1", zoneKey, "a")}, wantPatches: 1, wantPinned: true},
		{name: "a pin of no requirement is reused",
			gate: true, accessibility: true, allowed: allowedR1, pin: ptr("[]"), driverTopo: []*csi.Topology{r1a},
			wantCalls: 1, wantAffinity: []v1.TopologySelectorTerm{term(regionKey, "r1", zoneKey, "a")}, wantPatches: 1, wantPinned: true},
		{name: "malformed pin: not final, before the driver",
			gate: true, accessibility: true, allowed: allowedR1, pin: ptr(`[{"matchLabelExpressions":[]}]`),
			wantCode: codes.Unknown, wantErrText: "annotation " + snapshotapi.PinAnnotation},
		{name: "extra create metadata passed when asked",
			gate: true, accessibility: true, extraMetadata: true, driverTopo: []*csi.Topology{r1a},
			wantCalls: 1, wantAffinity: []v1.TopologySelectorTerm{term(regionKey, "r1", zoneKey, "a")}, wantPatches: 1, wantPinned: true, wantPinPatches: 1},
		{name: "nodeAffinity [] counts as absent: the answer is recorded",
			gate: true, accessibility: true, existing: []v1.TopologySelectorTerm{}, driverTopo: []*csi.Topology{r1a},
			wantCalls: 1, wantAffinity: []v1.TopologySelectorTerm{term(regionKey, "r1", zoneKey, "a")}, wantPatches: 1, wantPinned: true, wantPinPatches: 1},
		{name: "malformed allowedTopologies: not final, before the driver",
			gate: true, accessibility: true, allowed: []v1.TopologySelectorTerm{term("", "x")},
			wantCode: codes.Unknown, wantErrText: "VolumeSnapshotClass class allowedTopologies"},
		{name: "content of another volume: not final, before the driver",
			gate: true, accessibility: true, otherVolume: true,
			wantCode: codes.Unknown, wantErrText: `volume "vol-other"`},
		{name: "content unreadable: not final, before the driver",
			gate: true, accessibility: true, failGet: "volumesnapshotcontents",
			wantCode: codes.Unknown, wantErrText: "reading VolumeSnapshotContent content: etcd leader changed"},
		{name: "class unreadable: not final, before the driver",
			gate: true, accessibility: true, failGet: "volumesnapshotclasses",
			wantCode: codes.Unknown, wantErrText: "reading VolumeSnapshotClass class: etcd leader changed"},
		{name: "invalid accessible_topology: error after the call, nothing written",
			gate: true, accessibility: true, driverTopo: []*csi.Topology{segment("not a key!", "a")},
			wantCode: codes.Unknown, wantErrText: "unusable accessible_topology", wantCalls: 1, wantPinned: true, wantPinPatches: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runCreateCase(t, tc) })
	}
}

func runCreateCase(t *testing.T, tc createCase) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, tc.gate)
	fake := &fakeCSI{accessibility: tc.accessibility, topology: tc.driverTopo, createCalls: createCalls{Always: tc.driverErr}}
	content := contentObj("content", optTerms(t, tc.existing))
	if tc.pin != nil {
		content.SetAnnotations(map[string]string{snapshotapi.PinAnnotation: *tc.pin})
	}
	if tc.otherVolume {
		content.Object["spec"].(map[string]any)["source"] = map[string]any{"volumeHandle": "vol-other"}
	}
	client := dynamicClient(content, classObj(optTerms(t, tc.allowed)))
	if tc.failGet != "" {
		failed := false
		client.PrependReactor("get", tc.failGet, func(clienttesting.Action) (bool, runtime.Object, error) {
			if failed {
				return false, nil, nil
			}
			failed = true
			return true, nil, apierrors.NewServiceUnavailable("etcd leader changed")
		})
	}
	s := NewSnapshotter(SnapshotterOptions{Conn: serveCSI(t, fake, fake), DriverName: testDriver, Client: client,
		Accessibility: tc.accessibility, ExtraCreateMetadata: tc.extraMetadata})

	driver, id, created, size, ready, err := s.CreateSnapshot(context.Background(), snapName, "vol-1", createParams(map[string]string{"p": "v"}), nil)
	checkError(t, err, tc.wantCode, tc.wantErrText)
	if err == nil && (driver != testDriver || id != "snap-id-"+snapName || created.Unix() != 1700000000 || size != 1<<20 || !ready) {
		t.Errorf("CreateSnapshot = %q %q %v %d %v", driver, id, created, size, ready)
	}
	reqs := fake.Requests()
	if len(reqs) != tc.wantCalls {
		t.Fatalf("driver got %d CreateSnapshot calls, want %d", len(reqs), tc.wantCalls)
	}
	if len(reqs) > 0 {
		checkRequest(t, reqs[0], tc)
	}
	checkAPI(t, client.Actions(), tc)
	got, err := client.Resource(snapshotapi.VolumeSnapshotContents).Get(context.Background(), "content", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	affinity, err := snapshotapi.NodeAffinity(got)
	if diff := cmp.Diff(tc.wantAffinity, affinity); err != nil || diff != "" {
		t.Errorf("nodeAffinity (err %v) (-want +got):\n%s", err, diff)
	}
	checkPin(t, got, tc)
}

// checkPin: the content keeps the pin of the requirement the driver got,
// or has none.
func checkPin(t *testing.T, content metav1.Object, tc createCase) {
	t.Helper()
	pinned, ok, err := snapshotapi.Pin(content)
	if tc.pin != nil && tc.wantCode == codes.Unknown {
		return // a malformed pin is left for a person to fix
	}
	if err != nil || ok != tc.wantPinned || !cmp.Equal(pinned, tc.wantReq) {
		t.Errorf("pin = %v, present %v (err %v); want present %v holding %v", pinned, ok, err, tc.wantPinned, tc.wantReq)
	}
}

func pinOf(t *testing.T, terms []v1.TopologySelectorTerm) string {
	t.Helper()
	v, err := snapshotapi.PinValue(terms)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

func optTerms(t *testing.T, ts []v1.TopologySelectorTerm) []any {
	if ts == nil {
		return nil
	}
	return terms(t, ts...)
}

func checkError(t *testing.T, err error, code codes.Code, text string) {
	t.Helper()
	if code == codes.OK {
		if err != nil {
			t.Fatalf("CreateSnapshot: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("CreateSnapshot succeeded, want %v", code)
	}
	if got := status.Code(err); got != code {
		t.Errorf("error code %v, want %v: %v", got, code, err)
	}
	if _, isStatus := status.FromError(err); code == codes.Unknown && isStatus {
		t.Errorf("error %v carries a gRPC status; want a plain error, not final for upstream", err)
	}
	if !strings.Contains(err.Error(), text) {
		t.Errorf("error %q does not contain %q", err, text)
	}
}

func checkRequest(t *testing.T, req *csi.CreateSnapshotRequest, tc createCase) {
	t.Helper()
	var want *csi.TopologyRequirement
	if tc.wantReq != nil {
		var err error
		if want, err = topology.Requirement(tc.wantReq, snapName); err != nil {
			t.Fatal(err)
		}
		if len(want.GetRequisite()) == 0 || len(want.GetPreferred()) != len(want.GetRequisite()) {
			t.Fatalf("test requirement %v lacks requisite or preferred", want)
		}
	}
	if !proto.Equal(req.GetAccessibilityRequirements(), want) {
		t.Errorf("accessibility_requirements = %v, want %v", req.GetAccessibilityRequirements(), want)
	}
	if req.GetName() != snapName || req.GetSourceVolumeId() != "vol-1" || req.GetParameters()["p"] != "v" {
		t.Errorf("request %v lost name, source or parameters", req)
	}
	_, hasMeta := req.GetParameters()[utils.PrefixedVolumeSnapshotContentNameKey]
	if hasMeta != tc.extraMetadata {
		t.Errorf("driver sees create metadata = %v, want %v", hasMeta, tc.extraMetadata)
	}
}

func checkAPI(t *testing.T, actions []clienttesting.Action, tc createCase) {
	t.Helper()
	if tc.wantNoAPI && len(actions) > 0 {
		t.Errorf("API requests %v, want none", verbs(actions))
	}
	patches, pins := 0, 0
	for _, a := range actions {
		if a.GetVerb() == "patch" {
			if isPin(a.(clienttesting.PatchAction)) {
				pins++
			} else {
				patches++
			}
			checkPatch(t, a.(clienttesting.PatchAction))
		}
		if a.GetVerb() == "update" || a.GetVerb() == "create" || a.GetVerb() == "delete" {
			t.Errorf("unexpected %s", a.GetVerb())
		}
	}
	if patches != tc.wantPatches || pins != tc.wantPinPatches {
		t.Errorf("%d nodeAffinity patches, %d pin patches, want %d and %d (%v)", patches, pins, tc.wantPatches, tc.wantPinPatches, verbs(actions))
	}
}

func isPin(p clienttesting.PatchAction) bool {
	return strings.Contains(string(p.GetPatch()), snapshotapi.PinAnnotation)
}

// checkPatch: a merge patch of spec.nodeAffinity, or of the pin
// annotation, guarded by resourceVersion.
func checkPatch(t *testing.T, p clienttesting.PatchAction) {
	t.Helper()
	body := string(p.GetPatch())
	field := `"nodeAffinity"`
	if isPin(p) {
		field = `"annotations"`
	}
	if !strings.Contains(body, field) || !strings.Contains(body, `"resourceVersion"`) || strings.Contains(body, `"status"`) || strings.Count(body, `":{`) > 2 {
		t.Errorf("patch %s: want %s and metadata.resourceVersion only", body, field)
	}
}

func verbs(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// TestRecordedTopologyIsLossless: the terms written for {r1,a},{r2,b}
// admit exactly those two segments, not {r2,a} or {r1,b}.
func TestRecordedTopologyIsLossless(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	fake := &fakeCSI{accessibility: true, topology: []*csi.Topology{segment(regionKey, "r1", zoneKey, "a"), segment(regionKey, "r2", zoneKey, "b")}}
	client := dynamicClient(contentObj("content", nil), classObj(nil))
	s := NewSnapshotter(SnapshotterOptions{Conn: serveCSI(t, fake, fake), DriverName: testDriver, Client: client, Accessibility: true})
	if _, _, _, _, _, err := s.CreateSnapshot(context.Background(), snapName, "vol-1", createParams(nil), nil); err != nil {
		t.Fatal(err)
	}
	got, _ := client.Resource(snapshotapi.VolumeSnapshotContents).Get(context.Background(), "content", metav1.GetOptions{})
	affinity, err := snapshotapi.NodeAffinity(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []struct {
		region, zone string
		want         bool
	}{{"r1", "a", true}, {"r2", "b", true}, {"r2", "a", false}, {"r1", "b", false}} {
		if got := v1helper.MatchTopologySelectorTerms(affinity, labels.Set{regionKey: n.region, zoneKey: n.zone}); got != n.want {
			t.Errorf("node {%s,%s} matches = %v, want %v (nodeAffinity %v)", n.region, n.zone, got, n.want, affinity)
		}
	}
}

// TestRecordRetriesConflictsAndReportsFailures: a conflict re-reads and
// retries; a failing patch is an error the upstream controller treats as
// not final (no gRPC code), so it keeps the being-created annotation and
// calls CreateSnapshot again.
func TestRecordRetriesConflictsAndReportsFailures(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	gr := schema.GroupResource{Group: snapshotapi.Group, Resource: "volumesnapshotcontents"}
	for _, tc := range []struct {
		name      string
		failures  int // patches failing before one succeeds
		err       error
		wantErr   bool
		wantPatch int
	}{
		{"one conflict", 1, apierrors.NewConflict(gr, "content", errors.New("changed")), false, 2},
		{"patch forbidden", 100, apierrors.NewForbidden(gr, "content", errors.New("no RBAC")), true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeCSI{accessibility: true, topology: []*csi.Topology{segment(zoneKey, "a")}}
			client := dynamicClient(contentObj("content", nil), classObj(nil))
			failures, patches := tc.failures, 0
			client.PrependReactor("patch", "volumesnapshotcontents", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if isPin(a.(clienttesting.PatchAction)) {
					return false, nil, nil
				}
				patches++
				if failures > 0 {
					failures--
					return true, nil, tc.err
				}
				return false, nil, nil
			})
			s := NewSnapshotter(SnapshotterOptions{Conn: serveCSI(t, fake, fake), DriverName: testDriver, Client: client, Accessibility: true})
			_, _, _, _, _, err := s.CreateSnapshot(context.Background(), snapName, "vol-1", createParams(nil), nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CreateSnapshot error %v, want error: %v", err, tc.wantErr)
			}
			if err != nil && (status.Code(err) != codes.Unknown || !strings.Contains(err.Error(), "recording nodeAffinity")) {
				t.Errorf("error %v: want a non-gRPC error about recording nodeAffinity", err)
			}
			if patches != tc.wantPatch {
				t.Errorf("%d patch attempts, want %d", patches, tc.wantPatch)
			}
		})
	}
}
