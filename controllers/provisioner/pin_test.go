package provisioner

import (
	"context"
	"errors"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// scripted is a delegate that answers each attempt with the next state and
// error, and records the allowedTopologies it got.
type scripted struct {
	results []result
	got     [][]v1.TopologySelectorTerm
}

type result struct {
	state controller.ProvisioningState
	err   error
}

func (s *scripted) Provision(_ context.Context, o controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	s.got = append(s.got, o.StorageClass.AllowedTopologies)
	r := s.results[0]
	s.results = s.results[1:]
	if r.err == nil && r.state == controller.ProvisioningFinished {
		return &v1.PersistentVolume{}, r.state, nil
	}
	return nil, r.state, r.err
}

func (s *scripted) Delete(context.Context, *v1.PersistentVolume) error { return nil }

var (
	lost      = result{controller.ProvisioningInBackground, status.Error(codes.DeadlineExceeded, "lost")}
	misspelt  = result{controller.ProvisioningFinished, status.Error(codes.InvalidArgument, "no zone x")}
	before    = result{controller.ProvisioningFinished, errors.New("claim Selector is not supported")}
	noChange  = result{controller.ProvisioningNoChange, errors.New("snapshot not ready")}
	succeeded = result{controller.ProvisioningFinished, nil}
)

// TestPinnedAcrossAttempts drives one wrapper through attempts on one
// claim, changing the content's nodeAffinity between them: while an
// earlier call may have created the volume the pin is repeated; after a
// final CSI error the objects decide again; the annotation is written only
// when the pin changes.
func TestPinnedAcrossAttempts(t *testing.T) {
	zoneA, zoneB := terms(term(regionKey, "r1", zoneKey, "a")), terms(term(regionKey, "r1", zoneKey, "b"))
	type attempt struct {
		affinity []v1.TopologySelectorTerm // the content's before the attempt
		answer   result
		want     []v1.TopologySelectorTerm // handed to the delegate
		wantPins int                       // pin writes so far
	}
	for _, tc := range []struct {
		name     string
		attempts []attempt
	}{
		{name: "lost reply, nodeAffinity edited: the retry repeats the pin", attempts: []attempt{
			{affinity: zoneA, answer: lost, want: zoneA, wantPins: 1},
			{affinity: zoneB, answer: lost, want: zoneA, wantPins: 1},
			{affinity: zoneB, answer: succeeded, want: zoneA, wantPins: 1},
		}},
		{name: "upstream fails before the call (no change): the pin stays", attempts: []attempt{
			{affinity: zoneA, answer: lost, want: zoneA, wantPins: 1},
			{affinity: zoneB, answer: noChange, want: zoneA, wantPins: 1},
			{affinity: zoneB, answer: before, want: zoneA, wantPins: 1},
			{affinity: zoneB, answer: succeeded, want: zoneA, wantPins: 1},
		}},
		{name: "final CSI error: unchanged objects are not pinned again, changed ones are", attempts: []attempt{
			{affinity: zoneA, answer: misspelt, want: zoneA, wantPins: 1},
			{affinity: zoneA, answer: misspelt, want: zoneA, wantPins: 1},
			{affinity: zoneB, answer: lost, want: zoneB, wantPins: 2},
			{affinity: zoneA, answer: succeeded, want: zoneB, wantPins: 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
			lookup := &fakeLookup{snapshots: map[string]*snapv1.VolumeSnapshot{ns + "/snap": boundSnapshot("snap", "c")}, contents: map[string]*unstructured.Unstructured{}}
			pvc := claim(snapshotDataSource("snap"))
			kube := fake.NewClientset(pvc)
			delegate := &scripted{}
			p := wrap(delegate, lookup, kube)
			for i, a := range tc.attempts {
				lookup.contents["c"] = content("c", a.affinity)
				delegate.results = []result{a.answer}
				options := controller.ProvisionOptions{StorageClass: storageClass(immediate, nil), PVC: pvc, PVName: "pvc-1"}
				if _, _, err := p.Provision(context.Background(), options); !errors.Is(err, a.answer.err) {
					t.Fatalf("attempt %d: error %v, want the delegate's %v", i, err, a.answer.err)
				}
				if got := delegate.got[len(delegate.got)-1]; !sameTerms(got, a.want) {
					t.Errorf("attempt %d: delegate got %s, want %s", i, formatTerms(got), formatTerms(a.want))
				}
				if got := pinWrites(kube); got != a.wantPins {
					t.Errorf("after attempt %d: %d pin writes, want %d", i, got, a.wantPins)
				}
			}
		})
	}
}

func pinWrites(kube *fake.Clientset) int {
	n := 0
	for _, a := range kube.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && p.GetResource().Resource == "persistentvolumeclaims" && strings.Contains(string(p.GetPatch()), snapshotapi.PinAnnotation) {
			n++
		}
	}
	return n
}

// TestPinReadFromTheClaim: a new process (no memory) repeats the pin it
// finds on the claim, reading nothing; a pin edited by hand into garbage
// stops the claim with an error naming the annotation.
func TestPinReadFromTheClaim(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	for _, tc := range []struct {
		name    string
		value   string
		want    []v1.TopologySelectorTerm
		wantErr string
	}{
		{name: "a pin", value: `[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["a"]}]}]`, want: terms(term(zoneKey, "a"))},
		{name: "a pin of the class's own (none)", value: `[]`},
		{name: "garbage", value: `zone-a`, wantErr: "annotation " + snapshotapi.PinAnnotation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := &fakeLookup{}
			pvc := claim(snapshotDataSource("snap"))
			pvc.Annotations = map[string]string{snapshotapi.PinAnnotation: tc.value}
			delegate := &scripted{results: []result{succeeded}}
			options := controller.ProvisionOptions{StorageClass: storageClass(immediate, nil), PVC: pvc, PVName: "pvc-1"}
			_, _, err := wrap(delegate, lookup, fake.NewClientset(pvc)).Provision(context.Background(), options)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || len(delegate.got) != 0 {
					t.Fatalf("error %v, delegate called %d times; want %q and no call", err, len(delegate.got), tc.wantErr)
				}
				return
			}
			if err != nil || lookup.reads != 0 || !sameTerms(delegate.got[0], tc.want) {
				t.Fatalf("error %v, %d reads, delegate got %v; want the pin %v and no read", err, lookup.reads, delegate.got, tc.want)
			}
		})
	}
}

// TestPinsLifecycle: the memory of a pin lasts while the lib may retry
// the claim, deleted or not, and no longer.
func TestPinsLifecycle(t *testing.T) {
	const uid = "u"
	for _, tc := range []struct {
		name  string
		steps func(ps *pins)
		want  bool // the pin is still remembered
	}{
		{name: "deleted while idle: forgotten", want: false, steps: func(ps *pins) { ps.deleted(uid) }},
		{name: "deleted while in background: kept for the lib's retry", want: true, steps: func(ps *pins) {
			ps.begin(uid)
			ps.settle(uid, controller.ProvisioningInBackground, lost.err)
			ps.deleted(uid)
		}},
		{name: "deleted during an attempt that ends in background: kept", want: true, steps: func(ps *pins) {
			ps.begin(uid)
			ps.deleted(uid)
			ps.settle(uid, controller.ProvisioningInBackground, lost.err)
		}},
		{name: "deleted during an attempt that ends final: forgotten", want: false, steps: func(ps *pins) {
			ps.begin(uid)
			ps.deleted(uid)
			ps.settle(uid, controller.ProvisioningFinished, misspelt.err)
		}},
		{name: "deleted, in background, then the retry succeeds: forgotten", want: false, steps: func(ps *pins) {
			ps.settle(uid, controller.ProvisioningInBackground, lost.err)
			ps.deleted(uid)
			ps.settle(uid, controller.ProvisioningFinished, nil)
		}},
		{name: "no change keeps the state", want: true, steps: func(ps *pins) {
			ps.settle(uid, controller.ProvisioningInBackground, lost.err)
			ps.settle(uid, controller.ProvisioningNoChange, noChange.err)
			ps.deleted(uid)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := &pins{}
			ps.set(uid, nil)
			tc.steps(ps)
			if _, ok := ps.get(uid); ok != tc.want {
				t.Errorf("remembered = %v, want %v", ok, tc.want)
			}
		})
	}
}
