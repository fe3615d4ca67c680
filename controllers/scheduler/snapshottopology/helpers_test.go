package snapshottopology

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

const ns = "default"

// env is a scheduler framework with the plugin on fake API clients.
type env struct {
	fw        framework.Framework
	pl        *Plugin
	dyn       *dynamicfake.FakeDynamicClient
	activator *recordingActivator
}

// newEnv builds the plugin inside a framework, with the gate on, on fake
// clients holding objs (core objects and unstructured snapshot objects),
// and waits for every informer.
func newEnv(t testing.TB, objs ...runtime.Object) *env {
	t.Helper()
	return newEnvGate(t, true, objs...)
}

// newEnvGate is newEnv with the gate set to gate. With the gate off the
// plugin is built by New, as the scheduler builds it.
func newEnvGate(t testing.TB, gate bool, objs ...runtime.Object) *env {
	t.Helper()
	return newEnvOpts(t, envOpts{gate: gate}, objs...)
}

// envOpts are the gates of an env: VolumeSnapshotTopology, and
// Kubernetes' CrossNamespaceVolumeDataSource.
type envOpts struct {
	gate, crossNamespace bool
}

func newEnvOpts(t testing.TB, o envOpts, objs ...runtime.Object) *env {
	t.Helper()
	gate := o.gate
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.VolumeSnapshotTopology, gate)
	var core, snap []runtime.Object
	for _, o := range objs {
		if _, ok := o.(*unstructured.Unstructured); ok {
			snap = append(snap, o)
		} else {
			core = append(core, o)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client := fake.NewClientset(core...)
	factory := informers.NewSharedInformerFactory(client, 0)
	e := &env{
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			snapshotapi.VolumeSnapshots:        "VolumeSnapshotList",
			snapshotapi.VolumeSnapshotContents: "VolumeSnapshotContentList",
			snapshotapi.ReferenceGrants:        "ReferenceGrantList",
		}, snap...),
		activator: &recordingActivator{},
	}
	newFn := func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		if !gate {
			pl, err := New(ctx, args, h)
			e.pl, _ = pl.(*Plugin)
			return pl, err
		}
		pl, err := newPlugin(ctx, h, e.dyn, o.crossNamespace)
		e.pl = pl
		return pl, err
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
		tf.RegisterPluginAsExtensions(Name, newFn, "PreFilter", "Filter"),
	}, "test",
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithPodActivator(e.activator),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewSnapshot(nil, nil)))
	if err != nil {
		t.Fatalf("NewFramework: %v", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	e.fw = fw
	return e
}

// recordingActivator records the pods the plugin activates.
type recordingActivator struct {
	mu  sync.Mutex
	got []string
}

func (a *recordingActivator) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range pods {
		a.got = append(a.got, k)
	}
}

func (a *recordingActivator) activated() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

// Builders. Names are short on purpose: tables read as the scenario.

func podWith(name string, vols ...v1.Volume) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Volumes: vols},
	}
}

func claimVol(claim string) v1.Volume {
	return v1.Volume{Name: "v-" + claim, VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}
}

func ephemeralVol(name, snapshot string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{DataSource: snapshotRef(snapshot)}},
	}}}
}

func snapshotRef(name string) *v1.TypedLocalObjectReference {
	return &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.SnapshotKind, Name: name}
}

// pvc is an unbound PVC restoring from snapshot (none if empty).
func pvc(name, snapshot string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if snapshot != "" {
		c.Spec.DataSource = snapshotRef(snapshot)
	}
	return c
}

// ownedBy makes the PVC owned by pod, as the ephemeral controller does.
func ownedBy(c *v1.PersistentVolumeClaim, pod *v1.Pod) *v1.PersistentVolumeClaim {
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
	return c
}

// vs is a VolumeSnapshot bound to content (unbound if empty).
func vs(name, content string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1",
		"kind":       "VolumeSnapshot",
		"metadata":   map[string]any{"namespace": ns, "name": name, "uid": "uid-" + name},
		"spec":       map[string]any{"source": map[string]any{"persistentVolumeClaimName": "origin"}},
	}}
	if content != "" {
		u.Object["status"] = map[string]any{"boundVolumeSnapshotContentName": content}
	}
	return u
}

// vsc is a cut content bound to snapshot ns/snap with nodeAffinity
// terms (none if nil).
func vsc(name, snap string, terms ...any) *unstructured.Unstructured {
	spec := map[string]any{
		"driver":            "zonepath.csi.dev",
		"deletionPolicy":    "Delete",
		"source":            map[string]any{"volumeHandle": "vol-1"},
		"volumeSnapshotRef": map[string]any{"namespace": ns, "name": snap, "uid": "uid-" + snap},
	}
	if terms != nil {
		spec["nodeAffinity"] = terms
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1",
		"kind":       "VolumeSnapshotContent",
		"metadata":   map[string]any{"name": name},
		"spec":       spec,
		"status":     map[string]any{"snapshotHandle": "snap-" + name},
	}}
}

// beingDeleted is a copy of u with a deletionTimestamp: a deletion the
// snapshot-controller's finalizers hold.
func beingDeleted(u *unstructured.Unstructured) *unstructured.Unstructured {
	c := u.DeepCopy()
	c.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)})
	return c
}

// term is a nodeAffinity term in unstructured form: key, values, key,
// values ...
func term(kv ...any) any {
	var exprs []any
	for i := 0; i+1 < len(kv); i += 2 {
		var values []any
		for _, v := range kv[i+1].([]string) {
			values = append(values, v)
		}
		exprs = append(exprs, map[string]any{"key": kv[i], "values": values})
	}
	return map[string]any{"matchLabelExpressions": exprs}
}

const (
	zoneKey   = "topology.kubernetes.io/zone"
	regionKey = "topology.kubernetes.io/region"
)

func zones(z ...string) any { return term(zoneKey, z) }

// foreign moves a snapshot object into namespace "foreign", and a
// content's snapshot reference with it.
func foreign(u *unstructured.Unstructured) *unstructured.Unstructured {
	if u.GetKind() == "VolumeSnapshot" {
		u.SetNamespace("foreign")
	} else {
		_ = unstructured.SetNestedField(u.Object, "foreign", "spec", "volumeSnapshotRef", "namespace")
	}
	return u
}

// grant is a ReferenceGrant in namespace foreign letting claims of
// namespace from refer to its VolumeSnapshots.
func grant(from string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1beta1",
		"kind":       "ReferenceGrant",
		"metadata":   map[string]any{"namespace": "foreign", "name": "g"},
		"spec": map[string]any{
			"from": []any{map[string]any{"group": "", "kind": "PersistentVolumeClaim", "namespace": from}},
			"to":   []any{map[string]any{"group": snapshotapi.Group, "kind": snapshotapi.SnapshotKind}},
		},
	}}
}

func nodeInfo(name string, labels map[string]string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	return ni
}

// TestMain registers the scheduler's metrics, which a framework
// instruments its plugins with.
func TestMain(m *testing.M) {
	metrics.Register()
	os.Exit(m.Run())
}
