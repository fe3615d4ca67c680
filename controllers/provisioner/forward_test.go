package provisioner

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	csitrans "k8s.io/csi-translation-lib"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// guarded is a delegate with every optional interface of the lib, each
// answering the opposite of the lib's default so forwarding is visible.
type guarded struct {
	recorder
	deleted *v1.PersistentVolume
}

func (g *guarded) ShouldProvision(context.Context, *v1.PersistentVolumeClaim) bool { return false }
func (g *guarded) SupportsBlock(context.Context) bool                              { return true }
func (g *guarded) ShouldDelete(context.Context, *v1.PersistentVolume) bool         { return false }
func (g *guarded) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	g.deleted = pv
	return errSentinel
}

var errSentinel = errors.New("sentinel")

func TestOptionalInterfacesForwarded(t *testing.T) {
	ctx := context.Background()
	pv := &v1.PersistentVolume{}
	g := &guarded{}
	w := New(g, Options{})
	if w.ShouldProvision(ctx, claim(nil)) || !w.SupportsBlock(ctx) || w.ShouldDelete(ctx, pv) {
		t.Error("an optional interface of the delegate was not forwarded")
	}
	if err := w.Delete(ctx, pv); !errors.Is(err, errSentinel) || g.deleted != pv {
		t.Errorf("Delete not forwarded: err %v", err)
	}
}

// TestDefaultsMatchTheLib: for a delegate without an optional interface
// the wrapper must answer what the lib assumes when the interface is
// absent (provision, no block, delete), or wrapping would change behaviour.
func TestDefaultsMatchTheLib(t *testing.T) {
	ctx := context.Background()
	w := New(&recorder{}, Options{})
	if !w.ShouldProvision(ctx, claim(nil)) || w.SupportsBlock(ctx) || !w.ShouldDelete(ctx, &v1.PersistentVolume{}) {
		t.Error("defaults differ from the lib's behaviour without the optional interfaces")
	}
}

// TestWrapperHasEveryUpstreamMethod compares method sets with the real
// upstream provisioner, so that an upstream upgrade adding an optional
// interface (a method the lib type-asserts) fails here instead of being
// silently dropped by the wrapper.
func TestWrapperHasEveryUpstreamMethod(t *testing.T) {
	upstream := testUpstream(t, nil, "zonepath.csi.dev", nil, false, nil)
	want, got := reflect.TypeOf(upstream), reflect.TypeOf(New(upstream, Options{}))
	for i := range want.NumMethod() {
		m := want.Method(i)
		gm, ok := got.MethodByName(m.Name)
		if !ok {
			t.Errorf("wrapper lacks upstream method %s%s", m.Name, m.Type)
			continue
		}
		// Drop the receivers before comparing signatures.
		if !sameSignature(m.Type, gm.Type) {
			t.Errorf("wrapper method %s has type %s, upstream %s", m.Name, gm.Type, m.Type)
		}
	}
	for _, iface := range []reflect.Type{
		reflect.TypeFor[controller.Qualifier](),
		reflect.TypeFor[controller.BlockProvisioner](),
		reflect.TypeFor[controller.DeletionGuard](),
	} {
		if want.Implements(iface) && !got.Implements(iface) {
			t.Errorf("upstream implements %s, the wrapper does not", iface)
		}
	}
}

func sameSignature(a, b reflect.Type) bool {
	if a.NumIn() != b.NumIn() || a.NumOut() != b.NumOut() {
		return false
	}
	for i := 1; i < a.NumIn(); i++ {
		if a.In(i) != b.In(i) {
			return false
		}
	}
	for i := range a.NumOut() {
		if a.Out(i) != b.Out(i) {
			return false
		}
	}
	return true
}

// testUpstream builds external-provisioner's provisioner the way its
// command does, over fake clients (kube: a new one when nil) and the given
// CSI connection (nil when no call will be made).
func testUpstream(t *testing.T, conn csiConn, driver string, snaps *snapfake.Clientset, withTopology bool, kube *fake.Clientset) controller.Provisioner {
	t.Helper()
	if kube == nil {
		kube = fake.NewClientset()
	}
	if snaps == nil {
		snaps = snapfake.NewSimpleClientset()
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	pluginCaps := map[csi.PluginCapability_Service_Type]bool{csi.PluginCapability_Service_CONTROLLER_SERVICE: true}
	if withTopology {
		pluginCaps[csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS] = true
	}
	controllerCaps := map[csi.ControllerServiceCapability_RPC_Type]bool{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME:   true,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT: true,
	}
	return ctrl.NewCSIProvisioner(kube, 10*time.Second, "test", "pvc", -1, conn, snaps, driver,
		pluginCaps, controllerCaps, "", false, true, csitrans.New(),
		factory.Storage().V1().StorageClasses().Lister(), factory.Storage().V1().CSINodes().Lister(),
		factory.Core().V1().Nodes().Lister(), factory.Core().V1().PersistentVolumeClaims().Lister(),
		nil, nil, false, "", nil, false, false, ctrl.NewInMemoryStore())
}
