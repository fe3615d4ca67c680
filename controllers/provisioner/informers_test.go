package provisioner

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

func TestNewCachesFollowsCapabilitiesAndGate(t *testing.T) {
	plain := &driver{pluginCaps: map[csi.PluginCapability_Service_Type]bool{}, ctrlCaps: map[csi.ControllerServiceCapability_RPC_Type]bool{}}
	full := &driver{
		pluginCaps: map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS: true},
		ctrlCaps:   map[csi.ControllerServiceCapability_RPC_Type]bool{csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME: true},
	}
	cases := []struct {
		name                       string
		d                          *driver
		gate                       bool
		topology, attach, snapshot bool
	}{
		{name: "no topology, no attach, gate off", d: plain},
		{name: "topology and attach, gate off", d: full, topology: true, attach: true},
		{name: "gate on watches snapshots", d: plain, gate: true, snapshot: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := newCaches(fake.NewClientset(), tc.d, tc.gate, snapfake.NewSimpleClientset(), dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()))
			got := []bool{k.csiNodes != nil, k.nodes != nil, k.vas != nil, k.lookup != nil, k.snapshots != nil}
			want := []bool{tc.topology, tc.topology, tc.attach, tc.snapshot, tc.snapshot}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("csiNodes, nodes, vas, lookup, snapshot informers present = %v, want %v", got, want)
			}
		})
	}
}

// TestListersReadNodeAffinityFromInformers runs the real informers over
// fake clients: the dynamic cache must keep spec.nodeAffinity, which a
// typed client/v8 cache would drop, and narrowing must see it.
func TestListersReadNodeAffinityFromInformers(t *testing.T) {
	// client/v8's fake clientset predates watch-list support and does not
	// say so, so its informers would wait for a bookmark that never comes.
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, false)
	snap := boundSnapshot("snap", "snapcontent-x")
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{snapshotapi.VolumeSnapshotContents: "VolumeSnapshotContentList"},
		content("snapcontent-x", snapR1))
	d := &driver{pluginCaps: map[csi.PluginCapability_Service_Type]bool{}, ctrlCaps: map[csi.ControllerServiceCapability_RPC_Type]bool{}}
	k := newCaches(fake.NewClientset(), d, true, snapfake.NewSimpleClientset(snap), dyn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.start(ctx); err != nil {
		t.Fatal(err)
	}
	name, affinity, err := (&Provisioner{lookup: k.lookup}).snapshotTopology(snapshotRef{ns, "snap"})
	if err != nil || name != "snapcontent-x" || !reflect.DeepEqual(affinity, snapR1) {
		t.Fatalf("snapshotTopology = %q, %v, %v; want snapcontent-x, %v", name, formatTerms(affinity), err, formatTerms(snapR1))
	}
}
