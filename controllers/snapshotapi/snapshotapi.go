package snapshotapi

import (
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of the snapshot CRDs.
const Group = "snapshot.storage.k8s.io"

// The resources this package's fields live in, at the served version v1.
var (
	VolumeSnapshots        = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "volumesnapshots"}
	VolumeSnapshotContents = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "volumesnapshotcontents"}
	VolumeSnapshotClasses  = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "volumesnapshotclasses"}
)

// Field paths of the KEP-5943 fields, as unstructured.Nested* takes them.
var (
	NodeAffinityPath      = []string{"spec", "nodeAffinity"}
	AllowedTopologiesPath = []string{"allowedTopologies"}
)

// NodeAffinity returns a VolumeSnapshotContent's spec.nodeAffinity. A
// content without the field has none (nil, nil): it is accessible
// everywhere its driver says, the behaviour before KEP-5943.
func NodeAffinity(content *unstructured.Unstructured) ([]v1.TopologySelectorTerm, error) {
	return terms(content, NodeAffinityPath)
}

// AllowedTopologies returns a VolumeSnapshotClass's allowedTopologies.
func AllowedTopologies(class *unstructured.Unstructured) ([]v1.TopologySelectorTerm, error) {
	return terms(class, AllowedTopologiesPath)
}

func terms(obj *unstructured.Unstructured, path []string) ([]v1.TopologySelectorTerm, error) {
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if err != nil || !found || raw == nil {
		return nil, fieldError(obj, path, err)
	}
	list, ok := raw.([]interface{})
	if !ok {
		return nil, fieldError(obj, path, fmt.Errorf("is %T, not a list of topology selector terms", raw))
	}
	out := make([]v1.TopologySelectorTerm, len(list))
	for i, item := range list {
		m, ok := item.(map[string]interface{})
		if !ok {
			return nil, fieldError(obj, path, fmt.Errorf("item %d is %T, not a topology selector term", i, item))
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &out[i]); err != nil {
			return nil, fieldError(obj, path, fmt.Errorf("item %d: %w", i, err))
		}
	}
	return out, nil
}

func fieldError(obj *unstructured.Unstructured, path []string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %q: field %v: %w", obj.GetKind(), obj.GetName(), path, err)
}

// NodeAffinityPatch is the JSON merge patch that sets a content's
// spec.nodeAffinity to terms and changes nothing else. A merge patch
// replaces a list whole, which is what an atomic list wants. With a
// resourceVersion the API server applies it only to that version of the
// content, so a nodeAffinity written since the read is never overwritten.
func NodeAffinityPatch(terms []v1.TopologySelectorTerm, resourceVersion string) ([]byte, error) {
	if terms == nil {
		terms = []v1.TopologySelectorTerm{}
	}
	patch := map[string]any{"spec": map[string]any{"nodeAffinity": terms}}
	if resourceVersion != "" {
		patch["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	}
	return json.Marshal(patch)
}
