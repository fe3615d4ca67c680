package snapshotter

import (
	"context"
	"reflect"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// driverWorld: zone-c holds no snapshot copy, region-2 is elsewhere.
var driverWorld = drivertest.World("snapshotQuota: 0")

// zonepathConfig varies the in-process driver.
type zonepathConfig struct {
	noAccessibility bool
	faults          string // a fault file (driver/faults/README.md); "": none
	dial            []grpc.DialOption
}

// startZonepath serves the real zonepath driver in-process and returns a
// connection and the ID of a volume in zone-a.
func startZonepath(t *testing.T, cfg zonepathConfig) (*grpc.ClientConn, string) {
	t.Helper()
	conn := drivertest.Start(t, drivertest.Options{World: driverWorld, Faults: cfg.faults, Config: func(c *plugin.Config) {
		c.DisableSnapshotAccessibility = cfg.noAccessibility
	}}).Conn(t, cfg.dial...)
	zoneA := drivertest.Requisite(drivertest.Segment(regionKey, "region-1", zoneKey, "zone-a"))
	vol, err := csi.NewControllerClient(conn).CreateVolume(context.Background(), drivertest.VolumeRequest("source", 1<<20, zoneA))
	if err != nil {
		t.Fatal(err)
	}
	return conn, vol.GetVolume().GetVolumeId()
}

// TestWithZonepathDriver runs CreateSnapshot against the real driver: the
// probe finds its capability, a class restricted to region-2 puts the
// snapshot there, and a class restricted to a zone without quota is
// RESOURCE_EXHAUSTED with nothing recorded.
func TestWithZonepathDriver(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	for _, tc := range []struct {
		name         string
		noCapability bool
		allowed      v1.TopologySelectorTerm
		wantCode     codes.Code
		wantAffinity []v1.TopologySelectorTerm
	}{
		{name: "restricted to region-2", allowed: term(regionKey, "region-2"),
			wantAffinity: []v1.TopologySelectorTerm{term(regionKey, "region-2", zoneKey, "zone-d")}},
		{name: "restricted to a zone without quota", allowed: term(regionKey, "region-1", zoneKey, "zone-c"),
			wantCode: codes.ResourceExhausted},
		{name: "driver without the capability", noCapability: true, allowed: term(regionKey, "region-2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, volID := startZonepath(t, zonepathConfig{noAccessibility: tc.noCapability})
			caps, err := Probe(context.Background(), conn)
			if err != nil || !caps.CreateDelete || caps.Accessibility == tc.noCapability {
				t.Fatalf("Probe = %+v, %v", caps, err)
			}
			content := contentObj("content", nil)
			content.Object["spec"].(map[string]any)["source"] = map[string]any{"volumeHandle": volID}
			content.Object["spec"].(map[string]any)["driver"] = plugin.DefaultName
			client := dynamicClient(content, classObj(terms(t, tc.allowed)))
			s := NewSnapshotter(SnapshotterOptions{Conn: conn, DriverName: plugin.DefaultName, Client: client, Accessibility: caps.Accessibility})
			_, _, _, _, _, err = s.CreateSnapshot(context.Background(), snapName, volID, createParams(nil), nil)
			if status.Code(err) != tc.wantCode {
				t.Fatalf("CreateSnapshot error %v, want code %v", err, tc.wantCode)
			}
			got, _ := client.Resource(snapshotapi.VolumeSnapshotContents).Get(context.Background(), "content", metav1.GetOptions{})
			if affinity, _ := snapshotapi.NodeAffinity(got); !reflect.DeepEqual(affinity, tc.wantAffinity) {
				t.Errorf("nodeAffinity = %v, want %v", affinity, tc.wantAffinity)
			}
		})
	}
}
