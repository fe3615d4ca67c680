//go:build livecluster

package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/fakezones/clustertest"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// TestModifyVolume: VolumeAttributesClasses reach the driver, as deploy/rbac's
// zonepath-controller. A claim created with a class is provisioned with
// its parameters as mutable_parameters (zonepath-provisioner, upstream's
// library); changing the claim's class makes zonepath-resizer call
// ControllerModifyVolume, then record the class on the volume and the
// claim, and the driver reports the new tier (ControllerGetVolume's
// volume_context); a class the driver refuses (encryption cannot change in
// place) leaves the claim Infeasible with a Warning and the tier as it was.
func TestModifyVolume(t *testing.T) {
	t.Parallel() // a cluster of its own, as in TestThreeZonesTwoNodes
	u := clustertest.StartRBAC(t, spec.File{Zones: 1, NodesPerZone: 1}, "", "../../deploy/rbac")
	ctx := context.Background()
	for name, params := range map[string]map[string]string{
		"zp-premium":   {plugin.ParamIOPSTier: plugin.TierPremium},
		"zp-extreme":   {plugin.ParamIOPSTier: plugin.TierExtreme},
		"zp-encrypted": {plugin.ParamEncryption: "aes-256"},
	} {
		vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: plugin.DefaultName, Parameters: params}
		if _, err := u.Kube.StorageV1().VolumeAttributesClasses().Create(ctx, vac, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pvc := clustertest.PVC("modified", "zonepath-zone-a", "")
	pvc.Spec.VolumeAttributesClassName = ptr.To("zp-premium")
	claims := u.Kube.CoreV1().PersistentVolumeClaims(clustertest.Namespace)
	if _, err := claims.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	controller := csi.NewControllerClient(drivertest.Dial(t, "unix://"+u.Controller))
	m := modifyCheck{t: t, u: u, claims: claims.Get, controller: controller}
	m.waitClass("zp-premium", plugin.TierPremium) // not the default tier: CreateVolume had the class's parameters

	m.setClass("zp-extreme")
	m.waitClass("zp-extreme", plugin.TierExtreme)

	m.setClass("zp-encrypted")
	m.wait("Infeasible zp-encrypted and a Warning", func(pvc *v1.PersistentVolumeClaim, _ string) bool {
		st := pvc.Status.ModifyVolumeStatus
		return st != nil && st.Status == v1.PersistentVolumeClaimModifyVolumeInfeasible && st.TargetVolumeAttributesClassName == "zp-encrypted" &&
			m.warned(pvc, "VolumeModifyFailed")
	})
	m.waitClass("zp-extreme", plugin.TierExtreme) // nothing changed
}

type modifyCheck struct {
	t          *testing.T
	u          *clustertest.Cluster
	claims     func(context.Context, string, metav1.GetOptions) (*v1.PersistentVolumeClaim, error)
	controller csi.ControllerClient
}

func (m modifyCheck) setClass(name string) {
	m.t.Helper()
	patch := []byte(`{"spec":{"volumeAttributesClassName":"` + name + `"}}`)
	if _, err := m.u.Kube.CoreV1().PersistentVolumeClaims(clustertest.Namespace).Patch(context.Background(), "modified", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		m.t.Fatal(err)
	}
}

// waitClass waits until the claim's current class, its volume's class and
// the tier the driver reports are class and tier.
func (m modifyCheck) waitClass(class, tier string) {
	m.t.Helper()
	m.wait(fmt.Sprintf("class %s, tier %s", class, tier), func(pvc *v1.PersistentVolumeClaim, gotTier string) bool {
		pv, err := m.u.Kube.CoreV1().PersistentVolumes().Get(context.Background(), pvc.Spec.VolumeName, metav1.GetOptions{})
		return err == nil && ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, "") == class &&
			ptr.Deref(pv.Spec.VolumeAttributesClassName, "") == class && gotTier == tier
	})
}

// wait polls the bound claim and its volume's tier until ok.
func (m modifyCheck) wait(what string, ok func(pvc *v1.PersistentVolumeClaim, tier string) bool) {
	m.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pvc, err := m.claims(ctx, "modified", metav1.GetOptions{})
		if err != nil {
			return false, nil // keeps the last state seen
		}
		if pvc.Status.Phase != v1.ClaimBound {
			last = "claim " + string(pvc.Status.Phase)
			return false, nil
		}
		pv, err := m.u.Kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		vol, err := m.controller.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: pv.Spec.CSI.VolumeHandle})
		tier := vol.GetVolume().GetVolumeContext()[plugin.ParamIOPSTier]
		last = fmt.Sprintf("current %q, volume %q, modifyVolumeStatus %+v, tier %q (%v)", ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, ""),
			ptr.Deref(pv.Spec.VolumeAttributesClassName, ""), pvc.Status.ModifyVolumeStatus, tier, err)
		return err == nil && ok(pvc, tier), nil
	})
	if err != nil {
		m.t.Fatalf("%s: never; last %s\nresizer log:\n%s\nprovisioner log:\n%s", what, last, m.u.Log("resizer", 20), m.u.Log("provisioner", 10))
	}
	m.t.Logf("%s: %s", what, last)
}

func (m modifyCheck) warned(pvc *v1.PersistentVolumeClaim, reason string) bool {
	evs, err := m.u.Kube.CoreV1().Events(pvc.Namespace).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pvc.Name})
	return err == nil && slices.ContainsFunc(evs.Items, func(e v1.Event) bool { return e.Type == v1.EventTypeWarning && e.Reason == reason })
}
