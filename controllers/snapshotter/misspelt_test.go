package snapshotter

import (
	"context"
	"strings"
	"testing"

	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/driver/plugin"
)

// TestMisspeltZone (issue 25 item 4): a class whose allowedTopologies
// name a zone the driver does not have. The user sees a Warning naming
// the zone on the VolumeSnapshot (ours) and on its content (upstream's);
// the error is final, so the VolumeSnapshot can be deleted with nothing
// left behind, or the class corrected, which the next attempt uses.
func TestMisspeltZone(t *testing.T) {
	for _, fix := range []bool{false, true} {
		name := "deleted as it is"
		if fix {
			name = "class corrected"
		}
		t.Run(name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
			var dyn *dynamicfake.FakeDynamicClient
			conn, volID := startZonepath(t, zonepathConfig{})
			h := startHarnessOn(t, csiTarget{conn: conn, driver: plugin.DefaultName, volume: volID, accessibility: true}, func(d *dynamicfake.FakeDynamicClient) {
				dyn = d
				setClassTopology(t, context.Background(), d, term(regionKey, "region-1", zoneKey, "zone-x"))
				addFinalizer(t, d)
			})
			waitFor(t, "a Warning naming zone-x on the VolumeSnapshot", func() bool {
				return hasEventOn(t, h, "VolumeSnapshot", "snap", "SnapshotCreationRefused", "zone-x")
			})
			waitFor(t, "upstream's Warning naming zone-x on the content", func() bool {
				return hasEventOn(t, h, "VolumeSnapshotContent", "content", "SnapshotCreationFailed", "zone-x")
			})
			waitFor(t, "the being-created annotation removed (a final error)", func() bool {
				return !metav1.HasAnnotation(h.content(t).ObjectMeta, utils.AnnVolumeSnapshotBeingCreated)
			})
			// The pin is neither rewritten nor removed after a final error:
			// either would requeue the content at once, past upstream's
			// backoff, and a class that stays wrong would loop.
			waitFor(t, "a retry", func() bool { return eventCount(t, h, "SnapshotCreationRefused") >= 2 })
			if pins := countWrites(h, "pin"); pins != 1 || countWrites(h, "unpin") != 0 {
				t.Errorf("writes %v: want the pin written once and never removed while the class stays wrong", h.writes())
			}
			if fix {
				setClassTopology(t, context.Background(), dyn, term(regionKey, "region-1", zoneKey, "zone-b"))
				waitFor(t, "the content ready after the class is corrected", func() bool { return contentIsReady(h.content(t)) })
			}
			deleteSnapshot(t, dyn)
			checkDeletedOnBackend(t, h, conn)
		})
	}
}

// hasEventOn reports a Warning event of reason on the object kind/name
// whose message contains text.
func hasEventOn(t *testing.T, h *harness, kind, name, reason, text string) bool {
	t.Helper()
	events, err := h.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning &&
			e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

func countWrites(h *harness, what string) int {
	n := 0
	for _, w := range h.writes() {
		if w == what {
			n++
		}
	}
	return n
}

// eventCount sums the counts of the events of reason.
func eventCount(t *testing.T, h *harness, reason string) int {
	t.Helper()
	events, err := h.kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Reason == reason {
			n += max(int(e.Count), 1)
		}
	}
	return n
}
