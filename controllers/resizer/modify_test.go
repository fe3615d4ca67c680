package resizer

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

const tierKey = "zonepath.csi.dev/iopsTier"

func class(name, driver, tier string) *storagev1.VolumeAttributesClass {
	return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: driver, Parameters: map[string]string{tierKey: tier}}
}

// classClaim is claim with spec.volumeAttributesClassName target and
// status.currentVolumeAttributesClassName current ("": none).
func classClaim(target, current string) *v1.PersistentVolumeClaim {
	pvc := claim("1Gi", "1Gi")
	pvc.Spec.VolumeAttributesClassName = ptr.To(target)
	if current != "" {
		pvc.Status.CurrentVolumeAttributesClassName = ptr.To(current)
	}
	return pvc
}

// setClass is the user changing the claim's class.
func (h *harness) setClass(name string) {
	h.t.Helper()
	patch := `{"spec":{"volumeAttributesClassName":"` + name + `"}}`
	if _, err := h.kube.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), "data", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// waitApplied waits for the claim's current class to be want, then checks
// the rest of a finished modification: no modifyVolumeStatus, the
// volume's class, the success event.
func (h *harness) waitApplied(want string) {
	h.t.Helper()
	h.eventually("current class "+want, func() (bool, string) {
		cur := ptr.Deref(h.claim().Status.CurrentVolumeAttributesClassName, "")
		return cur == want, cur
	})
	if st := h.claim().Status.ModifyVolumeStatus; st != nil {
		h.t.Errorf("modifyVolumeStatus %+v left after success", st)
	}
	if got := ptr.Deref(h.volume().Spec.VolumeAttributesClassName, ""); got != want {
		h.t.Errorf("volume's class %q, want %q", got, want)
	}
	h.waitEvent("Normal VolumeModifySuccessful")
}

func (h *harness) waitModifyStatus(target string, want v1.PersistentVolumeClaimModifyVolumeStatus) {
	h.t.Helper()
	h.eventually("modifyVolumeStatus "+string(want), func() (bool, string) {
		st := h.claim().Status.ModifyVolumeStatus
		return st != nil && st.Status == want && st.TargetVolumeAttributesClassName == target, ptr.Deref(st, v1.ModifyVolumeStatus{}).TargetVolumeAttributesClassName + " " + string(ptr.Deref(st, v1.ModifyVolumeStatus{}).Status)
	})
}

// TestModifyApplied: a claim whose class differs from its current one gets
// ControllerModifyVolume with the class's parameters as
// mutable_parameters, then the volume and the claim record the class.
func TestModifyApplied(t *testing.T) {
	for _, tc := range []struct {
		name, current string
	}{{"from another class", "slow"}, {"from none", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCSI{controller: true, modify: true}
			h := start(t, f, classClaim("fast", tc.current), volume("1Gi", false), class("fast", testDriver, "premium"), class("slow", testDriver, "standard"))
			h.waitApplied("fast")
			calls := f.modifies.Requests()
			if len(calls) != 1 || calls[0].GetVolumeId() != "vol-1" || !maps.Equal(calls[0].GetMutableParameters(), map[string]string{tierKey: "premium"}) {
				t.Fatalf("ControllerModifyVolume calls %v, want one for vol-1 with the class's parameters", calls)
			}
			h.waitEvent("Normal VolumeModify: External resizer is modifying volume pv-data")
		})
	}
}

// TestModifyInfeasible: INVALID_ARGUMENT is final (CSI 1.13,
// ControllerModifyVolume Errors: "Parameters not supported ... The SP
// MUST NOT have applied any modification"): the claim is Infeasible with
// a Warning, no retry, nothing recorded as current; setting the class
// back to the current one ends the attempt.
func TestModifyInfeasible(t *testing.T) {
	f := &fakeCSI{controller: true, modify: true, modifies: modifyCalls{Queue: []error{status.Error(codes.InvalidArgument, "encryption cannot change in place")}}}
	// Resyncs (client-go raises the period to its minimum, 1s): an
	// infeasible claim is left alone on each, as after a restart.
	h := startResync(t, f, 50*time.Millisecond, classClaim("encrypted", "slow"), volume("1Gi", false), class("encrypted", testDriver, "premium"), class("slow", testDriver, "standard"))
	h.waitModifyStatus("encrypted", v1.PersistentVolumeClaimModifyVolumeInfeasible)
	h.waitEvent("Warning VolumeModifyFailed")
	// Kubernetes' e2e framework waits for this condition
	// (WaitForPersistentVolumeClaimModificationFailure), as csi-resizer sets it.
	if c := modifyConditions(h.claim()); len(c) != 1 || c[0].Type != v1.PersistentVolumeClaimVolumeModifyVolumeError ||
		!strings.Contains(c[0].Message, "encryption cannot change in place") {
		t.Fatalf("modify conditions after a refused change: %+v, want one ModifyVolumeError with the plugin's error", c)
	}
	time.Sleep(1500 * time.Millisecond) // a resync
	if n := len(f.modifies.Requests()); n != 1 {
		t.Fatalf("%d ControllerModifyVolume calls, want 1: an infeasible class is not retried", n)
	}
	if cur := ptr.Deref(h.claim().Status.CurrentVolumeAttributesClassName, ""); cur != "slow" {
		t.Fatalf("current class %q after a refused change, want slow", cur)
	}
	if pv := h.volume(); pv.Spec.VolumeAttributesClassName != nil {
		t.Fatalf("volume's class %q after a refused change", *pv.Spec.VolumeAttributesClassName)
	}
	h.setClass("slow")
	h.eventually("modifyVolumeStatus and conditions cleared", func() (bool, string) {
		c := h.claim()
		return c.Status.ModifyVolumeStatus == nil && len(modifyConditions(c)) == 0, fmt.Sprintf("status %v, conditions %+v", c.Status.ModifyVolumeStatus, modifyConditions(c))
	})
}

// modifyConditions are the claim's ModifyingVolume and ModifyVolumeError
// conditions.
func modifyConditions(pvc *v1.PersistentVolumeClaim) []v1.PersistentVolumeClaimCondition {
	var out []v1.PersistentVolumeClaimCondition
	for _, c := range pvc.Status.Conditions {
		if c.Type == v1.PersistentVolumeClaimVolumeModifyingVolume || c.Type == v1.PersistentVolumeClaimVolumeModifyVolumeError {
			out = append(out, c)
		}
	}
	return out
}

// TestModifyRetried: UNAVAILABLE is not final: the claim stays
// InProgress and the call is retried with backoff until it succeeds.
func TestModifyRetried(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "plugin restarting")
	f := &fakeCSI{controller: true, modify: true, modifies: modifyCalls{Queue: []error{unavailable, unavailable}}}
	h := start(t, f, classClaim("fast", ""), volume("1Gi", false), class("fast", testDriver, "premium"))
	h.waitApplied("fast")
	if n := len(f.modifies.Requests()); n != 3 {
		t.Fatalf("%d ControllerModifyVolume calls, want 3", n)
	}
	h.waitEvent("Warning VolumeModifyFailed: modify volume pv-data with VolumeAttributesClass fast failed")
}

// TestModifyPending: a class that does not exist yet makes the claim
// Pending ("the specified VolumeAttributesClass not existing"), without a
// call; creating it applies it.
func TestModifyPending(t *testing.T) {
	f := &fakeCSI{controller: true, modify: true}
	h := start(t, f, classClaim("later", ""), volume("1Gi", false))
	h.waitModifyStatus("later", v1.PersistentVolumeClaimModifyVolumePending)
	if n := len(f.modifies.Requests()); n != 0 {
		t.Fatalf("%d ControllerModifyVolume calls for a missing class", n)
	}
	if _, err := h.kube.StorageV1().VolumeAttributesClasses().Create(context.Background(), class("later", testDriver, "extreme"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitApplied("later")
}

// TestModifyOtherDriversClass: a class of another driver is never sent to
// this one (csi-provisioner refuses it the same way at creation).
func TestModifyOtherDriversClass(t *testing.T) {
	f := &fakeCSI{controller: true, modify: true}
	h := start(t, f, classClaim("foreign", ""), volume("1Gi", false), class("foreign", "other.csi.dev", "premium"))
	h.waitModifyStatus("foreign", v1.PersistentVolumeClaimModifyVolumeInfeasible)
	h.waitEvent("Warning VolumeModifyFailed: VolumeAttributesClass foreign is for driver other.csi.dev")
	if n := len(f.modifies.Requests()); n != 0 {
		t.Fatalf("%d ControllerModifyVolume calls with another driver's class", n)
	}
}

// TestModifyServed: the loop runs only for a plugin with MODIFY_VOLUME on
// a server with the v1 API.
func TestModifyServed(t *testing.T) {
	withVAC := []*metav1.APIResourceList{{GroupVersion: "storage.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "storageclasses"}, {Name: "volumeattributesclasses"}}}}
	withoutVAC := []*metav1.APIResourceList{{GroupVersion: "storage.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "storageclasses"}}}}
	for _, tc := range []struct {
		name      string
		modify    bool
		resources []*metav1.APIResourceList
		want      bool
	}{
		{"capability and API", true, withVAC, true},
		{"no capability", false, withVAC, false},
		{"no VolumeAttributesClass in storage.k8s.io/v1", true, withoutVAC, false},
		{"no storage.k8s.io/v1", true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &fakediscovery.FakeDiscovery{Fake: &fake.NewClientset().Fake}
			d.Resources = tc.resources
			got, err := modifyServed(Capabilities{Modify: tc.modify}, d)
			if err != nil || got != tc.want {
				t.Fatalf("modifyServed = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
