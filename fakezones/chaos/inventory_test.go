package chaos

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// What the final audit counts as the workload's: the driver's PVs,
// contents and attachments, the workload's classes, everything in its
// namespace; and which of them must still have their backend object.
func TestAudited(t *testing.T) {
	obj := func(fields map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: fields}
	}
	for _, tc := range []struct {
		name        string
		kind        string
		u           *unstructured.Unstructured
		want, bound bool
		handle      string
	}{
		{"a bound PV of the driver", kindPV, obj(map[string]any{"metadata": map[string]any{"name": "pv-1"},
			"spec": map[string]any{"csi": map[string]any{"driver": "zonepath.csi.dev", "volumeHandle": "vol-1"}}, "status": map[string]any{"phase": "Bound"}}),
			true, true, "vol-1"},
		{"a released PV", kindPV, obj(map[string]any{"metadata": map[string]any{"name": "pv-2"},
			"spec": map[string]any{"csi": map[string]any{"driver": "zonepath.csi.dev", "volumeHandle": "vol-2"}}, "status": map[string]any{"phase": "Released"}}),
			true, false, "vol-2"},
		{"another driver's PV", kindPV, obj(map[string]any{"metadata": map[string]any{"name": "pv-3"},
			"spec": map[string]any{"csi": map[string]any{"driver": "other.csi.dev", "volumeHandle": "vol-3"}}}),
			false, false, "vol-3"},
		{"a ready content", kindContent, obj(map[string]any{"metadata": map[string]any{"name": "c-1"}, "spec": map[string]any{"driver": "zonepath.csi.dev"},
			"status": map[string]any{"readyToUse": true, "snapshotHandle": "snap-1"}}), true, true, "snap-1"},
		{"a content being deleted is not bound", kindContent, obj(map[string]any{"metadata": map[string]any{"name": "c-2", "deletionTimestamp": "2026-11-26T08:00:00Z"},
			"spec": map[string]any{"driver": "zonepath.csi.dev"}, "status": map[string]any{"readyToUse": true, "snapshotHandle": "snap-2"}}), true, false, "snap-2"},
		{"the workload's class", kindSnapshotClass, obj(map[string]any{"metadata": map[string]any{"name": "chaos-c004-edit"}}), true, false, ""},
		{"the cluster's class", kindSnapshotClass, obj(map[string]any{"metadata": map[string]any{"name": "zonepath-region"}}), false, false, ""},
		{"a claim of the namespace", kindClaim, obj(map[string]any{"metadata": map[string]any{"name": "c001-src", "namespace": Namespace}}), true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, ok := audited(tc.kind, tc.u)
			if ok != tc.want || o.Bound != tc.bound || o.Handle != tc.handle {
				t.Fatalf("audited = %+v, %v; want counted %v, bound %v, handle %q", o, ok, tc.want, tc.bound, tc.handle)
			}
		})
	}
}
