package crds

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// TestNodeAffinityIsMutable evaluates the CEL rules of the extended
// VolumeSnapshotContent schema, transition rules included, on updates of
// nodeAffinity: none may fail. The last case changes an immutable field to
// show the rules do run, so the test can tell "mutable" from "not checked".
func TestNodeAffinityIsMutable(t *testing.T) {
	s := structural(t, decodeCRD(t, extended(t)[ContentsCRD].Data), "v1")
	validator := cel.NewValidator(s, true, celconfig.PerCallLimit)
	if validator == nil {
		t.Fatal("the extended schema has no CEL rules; the upstream ones are gone")
	}
	zoneA := []any{term("a")}
	zoneAB := []any{term("a"), term("b")}
	for _, tc := range []struct {
		name     string
		old, new map[string]any
		wantErr  bool
	}{
		{"set", content("vol-1", nil), content("vol-1", zoneA), false},
		{"widen", content("vol-1", zoneA), content("vol-1", zoneAB), false},
		{"narrow", content("vol-1", zoneAB), content("vol-1", zoneA), false},
		{"clear", content("vol-1", zoneA), content("vol-1", nil), false},
		{"control: volumeHandle is immutable", content("vol-1", zoneA), content("vol-2", zoneA), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := validator.Validate(context.Background(), field.NewPath(""), s, tc.new, tc.old, celconfig.RuntimeCELCostBudget)
			if (len(errs) > 0) != tc.wantErr {
				t.Errorf("errors = %v, want errors: %v", errs, tc.wantErr)
			}
		})
	}
}

func term(zone string) map[string]any {
	return map[string]any{"matchLabelExpressions": []any{
		map[string]any{"key": "topology.kubernetes.io/zone", "values": []any{zone}},
	}}
}

// content is a dynamically provisioned VolumeSnapshotContent that passes
// every upstream rule on its own.
func content(volumeHandle string, nodeAffinity []any) map[string]any {
	spec := map[string]any{
		"deletionPolicy":    "Delete",
		"driver":            "zonepath.csi.dev",
		"source":            map[string]any{"volumeHandle": volumeHandle},
		"volumeSnapshotRef": map[string]any{"name": "snap", "namespace": "default", "uid": "u1"},
	}
	if nodeAffinity != nil {
		spec["nodeAffinity"] = nodeAffinity
	}
	return runtime.DeepCopyJSON(map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1",
		"kind":       "VolumeSnapshotContent",
		"metadata":   map[string]any{"name": "c1"},
		"spec":       spec,
	})
}
