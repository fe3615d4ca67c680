package snapshotter

import (
	"testing"

	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

const (
	regionKey = "topology.kubernetes.io/region"
	zoneKey   = "topology.kubernetes.io/zone"
)

func terms(t *testing.T, ts ...v1.TopologySelectorTerm) []any {
	t.Helper()
	out := make([]any, 0, len(ts))
	for _, term := range ts {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&term)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// term is one TopologySelectorTerm; kv alternates key and value, a value
// may repeat its key to give the key several values.
func term(kv ...string) v1.TopologySelectorTerm {
	var t v1.TopologySelectorTerm
	for i := 0; i+1 < len(kv); i += 2 {
		n := len(t.MatchLabelExpressions)
		if n > 0 && t.MatchLabelExpressions[n-1].Key == kv[i] {
			t.MatchLabelExpressions[n-1].Values = append(t.MatchLabelExpressions[n-1].Values, kv[i+1])
			continue
		}
		t.MatchLabelExpressions = append(t.MatchLabelExpressions, v1.TopologySelectorLabelRequirement{Key: kv[i], Values: []string{kv[i+1]}})
	}
	return t
}

// contentObj is a dynamically provisioned content of testDriver being
// created for volume vol-1 with class "class".
func contentObj(name string, nodeAffinity []any) *unstructured.Unstructured {
	spec := map[string]any{
		"deletionPolicy":          "Delete",
		"driver":                  testDriver,
		"source":                  map[string]any{"volumeHandle": "vol-1"},
		"volumeSnapshotClassName": "class",
		"volumeSnapshotRef":       map[string]any{"name": "snap", "namespace": "default", "uid": "uid-1"},
	}
	if nodeAffinity != nil {
		spec["nodeAffinity"] = nodeAffinity
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": name, "resourceVersion": "1"}, "spec": spec,
	}}
}

func classObj(allowed []any) *unstructured.Unstructured {
	obj := map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": "class"}, "driver": testDriver, "deletionPolicy": "Delete",
	}
	if allowed != nil {
		obj["allowedTopologies"] = allowed
	}
	return &unstructured.Unstructured{Object: obj}
}

func dynamicClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		snapshotapi.VolumeSnapshotContents: "VolumeSnapshotContentList",
		snapshotapi.VolumeSnapshotClasses:  "VolumeSnapshotClassList",
	}, objs...)
}

// createParams are the parameters upstream passes with extra create
// metadata for content "content".
func createParams(extra map[string]string) map[string]string {
	p := map[string]string{
		utils.PrefixedVolumeSnapshotNameKey:        "snap",
		utils.PrefixedVolumeSnapshotNamespaceKey:   "default",
		utils.PrefixedVolumeSnapshotContentNameKey: "content",
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}
