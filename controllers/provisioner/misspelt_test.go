package provisioner

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/zonepath/zonepath/controllers/features"
)

// noFaults is a fault file without rules: the driver answers as it is.
// zonepath refuses a requisite naming none of its zones (zone-x) with
// INVALID_ARGUMENT naming the segment (driver README, Errors).
const noFaults = "rules: []\n"

// TestMisspeltZoneInNodeAffinity (issue 25 item 4, the claim's side): an
// admin's typo in a content's nodeAffinity reaches CreateVolume through
// the narrowed class. Upstream's lib already tells the user, on the claim
// they look at, with a ProvisioningFailed Warning carrying the driver's
// message (INVALID_ARGUMENT is its "infeasible" error, retried slowly);
// the error is final, so the lib stops tracking the claim, which can be
// deleted with nothing left on the backend (no finalizer of ours holds
// it).
func TestMisspeltZoneInNodeAffinity(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	e := newRestoreEnv(t, noFaults)
	e.setNodeAffinity(t, context.Background(), terms(term(regionKey, "region-1", zoneKey, "zone-x")))
	e.runProvisioner(t, 20*time.Millisecond)
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == "restore" && ev.Type == v1.EventTypeWarning && ev.Reason == "ProvisioningFailed" && strings.Contains(ev.Message, "zone-x") {
				return true, nil
			}
		}
		return false, err
	})
	if err != nil {
		t.Fatalf("no Warning naming zone-x on the claim: %v", err)
	}
	e.deleteClaim(t, context.Background())
	e.checkOnlySourceLeft(t)
}
