package provisioner

import (
	"context"
	"reflect"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

func TestNewCachesFollowsCapabilities(t *testing.T) {
	plain := &driver{pluginCaps: map[csi.PluginCapability_Service_Type]bool{}, ctrlCaps: map[csi.ControllerServiceCapability_RPC_Type]bool{}}
	full := &driver{
		pluginCaps: map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS: true},
		ctrlCaps:   map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true},
	}
	cases := []struct {
		name             string
		d                *driver
		topology, attach bool
	}{
		{name: "no topology, no attach", d: plain},
		{name: "topology and attach", d: full, topology: true, attach: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := newCaches(fake.NewClientset(), tc.d)
			got := []bool{k.csiNodes != nil, k.nodes != nil, k.vas != nil}
			want := []bool{tc.topology, tc.topology, tc.attach}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("csiNodes, nodes, vas present = %v, want %v", got, want)
			}
		})
	}
}

// TestLiveReaderReadsLiveObjects: narrowing must not decide from a stale
// copy. The content changes on the API server after the reader exists
// (the snapshotter records nodeAffinity and cuts the snapshot); an
// informer cache lagging behind would still hold it without nodeAffinity,
// and provisioning from that copy would place the volume anywhere the
// class allows. The reader must see the API server's nodeAffinity, which
// also proves the dynamic client keeps the field the typed structs drop.
func TestLiveReaderReadsLiveObjects(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, true)
	snap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(boundSnapshot("snap", "snapcontent-x"))
	if err != nil {
		t.Fatal(err)
	}
	vs := &unstructured.Unstructured{Object: snap}
	vs.SetAPIVersion("snapshot.storage.k8s.io/v1")
	vs.SetKind("VolumeSnapshot")
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{snapshotapi.VolumeSnapshotContents: "VolumeSnapshotContentList", snapshotapi.VolumeSnapshots: "VolumeSnapshotList"},
		vs, uncut(content("snapcontent-x", nil)))
	ctx := context.Background()
	if _, err := dyn.Resource(snapshotapi.VolumeSnapshotContents).Update(ctx, content("snapcontent-x", snapR1), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	delegate := &recorder{}
	pvc := claim(snapshotDataSource("snap"))
	options := controller.ProvisionOptions{StorageClass: storageClass(immediate, classAB), PVC: pvc, PVName: "pvc-1"}
	if _, _, err := wrap(delegate, snapshotapi.Live{Client: dyn}, fake.NewClientset(pvc)).Provision(ctx, options); err != nil {
		t.Fatal(err)
	}
	if got := delegate.options.StorageClass.AllowedTopologies; !reflect.DeepEqual(got, r1ZonesAB) {
		t.Errorf("delegate allowedTopologies = %v, want %v from the API server's nodeAffinity", formatTerms(got), formatTerms(r1ZonesAB))
	}
}
