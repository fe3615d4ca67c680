package main

import (
	"context"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// servedBeforeV137 are the APIs, among those kube-scheduler v1.37 reads,
// that API servers v1.35 and v1.36 serve by default: each kind is in the
// GA package of its group in k8s.io/api v0.35.4 and v0.36.1 (in the Go
// module cache). resource.k8s.io/v1 DeviceTaintRule is not: those
// releases have it only in v1alpha3 and v1beta2, both off by default.
var servedBeforeV137 = []string{
	"apps/v1 ReplicaSet", "apps/v1 StatefulSet", "policy/v1 PodDisruptionBudget",
	"resource.k8s.io/v1 DeviceClass", "resource.k8s.io/v1 ResourceClaim", "resource.k8s.io/v1 ResourceSlice",
	"storage.k8s.io/v1 CSIDriver", "storage.k8s.io/v1 CSINode", "storage.k8s.io/v1 CSIStorageCapacity",
	"storage.k8s.io/v1 StorageClass", "storage.k8s.io/v1 VolumeAttachment",
	"v1 Namespace", "v1 Node", "v1 PersistentVolume", "v1 PersistentVolumeClaim", "v1 Pod",
	"v1 ReplicationController", "v1 Service",
}

// componentGates are the gates deploy/components/scheduler-before-1.37
// appends to zonepath-scheduler's --feature-gates.
func componentGates(t *testing.T) map[featuregate.Feature]bool {
	t.Helper()
	data, err := os.ReadFile("../../../deploy/components/scheduler-before-1.37/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`value: --feature-gates=\$\(FEATURE_GATES\),(\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("scheduler-before-1.37 appends no gates to --feature-gates=$(FEATURE_GATES)")
	}
	gates := map[featuregate.Feature]bool{}
	for _, kv := range strings.Split(string(m[1]), ",") {
		k, v, _ := strings.Cut(kv, "=")
		gates[featuregate.Feature(k)] = v == "true"
	}
	return gates
}

// startedInformers are the informers kube-scheduler's New starts (the
// default profile, against a fake client that serves everything), as
// "group/version Kind": those the scheduler waits to sync before it runs
// for its lease. SnapshotTopology adds only its own, on the snapshot
// CRDs, which any Kubernetes version serves once they are installed.
func startedInformers(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	factory := scheduler.NewInformerFactory(client, 0, nil)
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(dynfake.NewSimpleDynamicClient(runtime.NewScheme()), 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if _, err := scheduler.New(ctx, client, factory, dyn, profile.NewRecorderFactory(broadcaster)); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	dyn.Start(ctx.Done())
	var got []string
	for typ := range factory.WaitForCacheSync(ctx.Done()) {
		obj, ok := reflect.New(typ.Elem()).Interface().(runtime.Object)
		if !ok {
			t.Fatalf("informer of %s, not an API object", typ)
		}
		gvks, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, gvks[0].GroupVersion().String()+" "+gvks[0].Kind)
	}
	for gvr := range dyn.WaitForCacheSync(ctx.Done()) {
		got = append(got, "dynamic "+gvr.String())
	}
	slices.Sort(got)
	return got
}

// TestInformersBeforeV137: with v1.37's gate defaults kube-scheduler
// waits for DeviceTaintRules, which v1.35 and v1.36 do not serve; with
// the gates of scheduler-before-1.37 every informer it starts is on an API
// they serve, so it syncs and runs for its lease there.
func TestInformersBeforeV137(t *testing.T) {
	const taintRules = "resource.k8s.io/v1 DeviceTaintRule"
	t.Run("v1.37 defaults", func(t *testing.T) {
		got := startedInformers(t)
		if !slices.Contains(got, taintRules) {
			t.Errorf("kube-scheduler no longer starts an informer on %s (it starts %q): check whether scheduler-before-1.37 is still needed", taintRules, got)
		}
	})
	t.Run("scheduler-before-1.37", func(t *testing.T) {
		for gate, on := range componentGates(t) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, gate, on)
		}
		got := startedInformers(t)
		for _, g := range got {
			if !slices.Contains(servedBeforeV137, g) {
				t.Errorf("kube-scheduler starts an informer on %s, which v1.35 and v1.36 do not serve (or which servedBeforeV137 does not list yet)", g)
			}
		}
		t.Logf("informers: %q", got)
	})
}
