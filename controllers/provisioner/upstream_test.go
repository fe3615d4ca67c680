package provisioner

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/fake"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/topology"
	"github.com/zonepath/zonepath/driver/drivertest"
)

type csiConn = *grpc.ClientConn

// worldYAML is the driver's topology: three zones in region-1, one in region-2.
var worldYAML = drivertest.World("")

// createRecorder keeps every CreateVolumeRequest the provisioner sends.
type createRecorder struct {
	mu   sync.Mutex
	reqs []*csi.CreateVolumeRequest
}

func (r *createRecorder) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if c, ok := req.(*csi.CreateVolumeRequest); ok {
		r.mu.Lock()
		r.reqs = append(r.reqs, c)
		r.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (r *createRecorder) last(t *testing.T) *csi.CreateVolumeRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		t.Fatal("no CreateVolume request reached the driver")
	}
	return r.reqs[len(r.reqs)-1]
}

// ebsWorldYAML is the driver's topology in EBS's shape, as the ebs-keys
// personality runs it: one region, no region key; NodeGetInfo reports the
// vendor zone key, the zone key and the OS key, volumes and snapshots the
// zone key alone.
const ebsWorldYAML = `keys: {omitRegion: true, nodeZone: ` + vendorZoneKey + `, nodeOS: ` + osKey + `}
regions:
- name: region-1
  zones: [{name: zone-a}, {name: zone-b}, {name: zone-c}]
`

// startDriver serves the real zonepath driver in-process and returns a
// connection that records CreateVolume requests.
func startDriver(t *testing.T) (*grpc.ClientConn, *createRecorder) {
	return startDriverIn(t, worldYAML)
}

func startDriverIn(t *testing.T, world string) (*grpc.ClientConn, *createRecorder) {
	t.Helper()
	rec := &createRecorder{}
	d := drivertest.Start(t, drivertest.Options{World: world})
	return d.Conn(t, grpc.WithUnaryInterceptor(rec.intercept)), rec
}

// snapshotInZoneA takes a real snapshot of a volume in region-1/zone-a and
// returns its ID and accessible topology as nodeAffinity terms, the way
// the snapshotter sidecar writes them.
func snapshotInZoneA(t *testing.T, conn *grpc.ClientConn) (string, []v1.TopologySelectorTerm) {
	return snapshotIn(t, conn, drivertest.Segment(regionKey, "region-1", zoneKey, "zone-a"))
}

// snapshotIn is snapshotInZoneA in any segment of the driver.
func snapshotIn(t *testing.T, conn *grpc.ClientConn, seg *csi.Topology) (string, []v1.TopologySelectorTerm) {
	t.Helper()
	ctx := context.Background()
	c := csi.NewControllerClient(conn)
	zoneA := drivertest.Requisite(seg)
	vol, err := c.CreateVolume(ctx, drivertest.VolumeRequest("source", 1<<30, zoneA))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := c.CreateSnapshot(ctx, drivertest.SnapshotRequest("snap", vol.GetVolume().GetVolumeId(), zoneA))
	if err != nil {
		t.Fatal(err)
	}
	affinity, err := topology.FromCSI(snap.GetSnapshot().GetAccessibleTopology())
	if err != nil || len(affinity) == 0 {
		t.Fatalf("snapshot accessible topology %v: %v", snap.GetSnapshot().GetAccessibleTopology(), err)
	}
	return snap.GetSnapshot().GetSnapshotId(), affinity
}

// snapshotObjects are a ready VolumeSnapshot ns/snap and its content, as
// the typed fake serves them to upstream (without nodeAffinity, which the
// typed client does not know) and as our lookup reads them (with it).
func snapshotObjects(driver, handle string, affinity []v1.TopologySelectorTerm) (*snapfake.Clientset, *fakeLookup) {
	name := "snapcontent-x"
	snap := boundSnapshot("snap", name)
	snap.Status.ReadyToUse = ptr(true)
	snap.Status.RestoreSize = ptr(resource.MustParse("1Gi"))
	typed := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: driver,
			VolumeSnapshotRef: v1.ObjectReference{Namespace: ns, Name: "snap", UID: snapUID}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: &handle},
	}
	lookup := &fakeLookup{
		snapshots: map[string]*snapv1.VolumeSnapshot{ns + "/snap": snap},
		contents:  map[string]*unstructured.Unstructured{name: content(name, affinity)},
	}
	return snapfake.NewSimpleClientset(snap, typed), lookup
}

// TestUpstreamReceivesIntersection drives the real external-provisioner
// v6.3.0 provisioner against the real driver: the CreateVolume request's
// requisite must be exactly the expansion of snapshot ∩ class, and the
// volume must land in the snapshot's zone. With the gate off, upstream's
// own requirement (the class's zones) goes out instead, which proves the
// check can fail.
func TestUpstreamReceivesIntersection(t *testing.T) {
	cases := []struct {
		name    string
		gate    bool
		class   []v1.TopologySelectorTerm
		want    []string // requisite segments as region/zone
		wantErr string
	}{
		{name: "class zones narrowed to the snapshot's", gate: true,
			class: terms(term(regionKey, "region-1", "region-2", zoneKey, "zone-a", "zone-b", "zone-d")), want: []string{"region-1/zone-a"}},
		{name: "class without allowedTopologies", gate: true, want: []string{"region-1/zone-a"}},
		{name: "gate off: upstream requisite is the class's", gate: false,
			class: terms(term(regionKey, "region-1", zoneKey, "zone-a", "zone-b")), want: []string{"region-1/zone-a", "region-1/zone-b"}},
		{name: "disjoint: the driver is never called", gate: true,
			class: terms(term(regionKey, "region-2")), wantErr: "do not intersect"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, tc.gate)
			conn, rec := startDriver(t)
			driver, err := ctrl.GetDriverName(conn, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			handle, affinity := snapshotInZoneA(t, conn)
			snaps, lookup := snapshotObjects(driver, handle, affinity)
			options := restoreOptions(driver, tc.class)
			p := wrap(testUpstream(t, conn, driver, snaps, true, nil), lookup, fake.NewClientset(options.PVC))

			pv, _, err := p.Provision(context.Background(), options)

			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || len(rec.reqs) != 1 {
					t.Fatalf("err %v, %d CreateVolume calls (the source's only); want %q and no restore call", err, len(rec.reqs), tc.wantErr)
				}
				return
			}
			req := rec.last(t)
			if got := segments(req.GetAccessibilityRequirements().GetRequisite()); !slices.Equal(got, tc.want) {
				t.Fatalf("requisite = %v, want %v", got, tc.want)
			}
			if got := segments(req.GetAccessibilityRequirements().GetPreferred()); !slices.Equal(got, tc.want) {
				t.Errorf("preferred = %v, want a permutation of %v", got, tc.want)
			}
			if !tc.gate {
				return
			}
			if err != nil || pv == nil {
				t.Fatalf("Provision: %v", err)
			}
			if got := pv.Spec.NodeAffinity.String(); !strings.Contains(got, "zone-a") || strings.Contains(got, "zone-b") {
				t.Errorf("restored PV nodeAffinity %s, want the snapshot's zone-a only", got)
			}
		})
	}
}

func restoreOptions(driver string, allowed []v1.TopologySelectorTerm) controller.ProvisionOptions {
	class := storageClass(immediate, allowed)
	class.Provisioner = driver
	class.Parameters = nil
	c := claim(snapshotDataSource("snap"))
	c.Annotations = map[string]string{"volume.kubernetes.io/storage-provisioner": driver}
	c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	return controller.ProvisionOptions{StorageClass: class, PVC: c, PVName: "pvc-claim-uid"}
}

// segments renders CSI segments as sorted region/zone strings.
func segments(ts []*csi.Topology) []string {
	out := make([]string, len(ts))
	for i, s := range ts {
		out[i] = s.GetSegments()[regionKey] + "/" + s.GetSegments()[zoneKey]
	}
	slices.Sort(out)
	return out
}

// TestUpstreamEBSKeys is TestUpstreamReceivesIntersection for a driver of
// EBS's shape (the ebs-keys personality) whose StorageClass names the
// vendor zone key while the snapshot carries topology.kubernetes.io/zone.
// The terms merge key by key into combinations; only those a node of the
// driver carries may reach CreateVolume. A disjoint class used to reach
// the driver as {zone: zone-a, vendor zone: zone-c}, which it refused with
// INVALID_ARGUMENT and a message naming neither the snapshot nor the
// class; it must be refused before CreateVolume, naming both (KEP-5943:
// "rather than deferring to a CSI driver failure").
func TestUpstreamEBSKeys(t *testing.T) {
	cases := []struct {
		name    string
		class   []v1.TopologySelectorTerm
		want    []string // requisite segments, sorted key=value lists
		wantErr []string
	}{
		{name: "vendor-key class holding the snapshot's zone: the nodes' combination",
			class: terms(term(vendorZoneKey, "zone-a", "zone-c")),
			want:  []string{zoneKey + "=zone-a," + vendorZoneKey + "=zone-a"}},
		{name: "class in the snapshot's key: the snapshot's zone, as before",
			class: terms(term(zoneKey, "zone-a", "zone-c")), want: []string{zoneKey + "=zone-a"}},
		{name: "vendor-key class disjoint from the snapshot: refused before the driver",
			class:   terms(term(vendorZoneKey, "zone-c")),
			wantErr: []string{"do not intersect", `VolumeSnapshotContent "snapcontent-x"`, `VolumeSnapshot "ns/snap"`, "no node of driver"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
			conn, rec := startDriverIn(t, ebsWorldYAML)
			driver, err := ctrl.GetDriverName(conn, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			handle, affinity := snapshotIn(t, conn, drivertest.Segment(zoneKey, "zone-a"))
			snaps, lookup := snapshotObjects(driver, handle, affinity)
			options := restoreOptions(driver, tc.class)
			nodes := driverNodes(driver, ebsNode("a-1", "zone-a"), ebsNode("b-1", "zone-b"), ebsNode("c-1", "zone-c"))
			p := wrapOn(testUpstream(t, conn, driver, snaps, true, nil), lookup, fake.NewClientset(options.PVC), nodes)

			pv, _, err := p.Provision(context.Background(), options)

			if tc.wantErr != nil {
				checkError(t, err, tc.wantErr)
				if len(rec.reqs) != 1 {
					t.Fatalf("%d CreateVolume calls, want the source's only: %v", len(rec.reqs), rec.reqs)
				}
				return
			}
			if err != nil || pv == nil {
				t.Fatalf("Provision: %v (requisite %v)", err, keyValues(rec.last(t).GetAccessibilityRequirements().GetRequisite()))
			}
			if got := keyValues(rec.last(t).GetAccessibilityRequirements().GetRequisite()); !slices.Equal(got, tc.want) {
				t.Fatalf("requisite = %v, want %v", got, tc.want)
			}
			if got := pv.Spec.NodeAffinity.String(); !strings.Contains(got, "zone-a") || strings.Contains(got, "zone-c") {
				t.Errorf("restored PV nodeAffinity %s, want the snapshot's zone-a only", got)
			}
		})
	}
}

// keyValues renders CSI segments as sorted "key=value,..." strings.
func keyValues(ts []*csi.Topology) []string {
	out := make([]string, len(ts))
	for i, s := range ts {
		pairs := make([]string, 0, len(s.GetSegments()))
		for _, k := range slices.Sorted(maps.Keys(s.GetSegments())) {
			pairs = append(pairs, k+"="+s.GetSegments()[k])
		}
		out[i] = strings.Join(pairs, ",")
	}
	slices.Sort(out)
	return out
}
