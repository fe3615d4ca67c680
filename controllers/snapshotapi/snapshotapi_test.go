package snapshotapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

var zoneA = v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
	{Key: "topology.kubernetes.io/region", Values: []string{"r1"}},
	{Key: "topology.kubernetes.io/zone", Values: []string{"a", "b"}},
}}

func TestNodeAffinity(t *testing.T) {
	cases := []struct {
		name    string
		doc     string
		want    []v1.TopologySelectorTerm
		wantErr string
	}{
		{name: "absent", doc: "kind: VolumeSnapshotContent\nspec: {driver: d}"},
		{name: "no spec", doc: "kind: VolumeSnapshotContent"},
		{name: "null", doc: "kind: VolumeSnapshotContent\nspec: {nodeAffinity: null}"},
		{name: "empty", doc: "kind: VolumeSnapshotContent\nspec: {nodeAffinity: []}", want: []v1.TopologySelectorTerm{}},
		{name: "terms", doc: `kind: VolumeSnapshotContent
spec:
  nodeAffinity:
  - matchLabelExpressions:
    - {key: topology.kubernetes.io/region, values: [r1]}
    - {key: topology.kubernetes.io/zone, values: [a, b]}`, want: []v1.TopologySelectorTerm{zoneA}},
		{name: "not a list", doc: "kind: VolumeSnapshotContent\nmetadata: {name: c}\nspec: {nodeAffinity: zone-a}", wantErr: `VolumeSnapshotContent "c": field [spec nodeAffinity]: is string`},
		{name: "item not a term", doc: "kind: VolumeSnapshotContent\nspec: {nodeAffinity: [a]}", wantErr: "item 0 is string"},
		{name: "bad expression", doc: "kind: VolumeSnapshotContent\nspec: {nodeAffinity: [{matchLabelExpressions: 3}]}", wantErr: "item 0:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NodeAffinity(object(t, tc.doc))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("NodeAffinity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllowedTopologies(t *testing.T) {
	got, err := AllowedTopologies(object(t, `kind: VolumeSnapshotClass
driver: zonepath.csi.dev
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/region, values: [r1]}
  - {key: topology.kubernetes.io/zone, values: [a, b]}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]v1.TopologySelectorTerm{zoneA}, got); diff != "" {
		t.Fatalf("AllowedTopologies (-want +got):\n%s", diff)
	}
}

// TestNodeAffinityPatchRoundTrips: the patch touches spec.nodeAffinity
// alone, plus metadata.resourceVersion when one is given, and reads back
// as the terms sent.
func TestNodeAffinityPatchRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		terms []v1.TopologySelectorTerm
		rv    string
	}{
		{terms: nil},
		{terms: []v1.TopologySelectorTerm{zoneA}},
		{terms: []v1.TopologySelectorTerm{zoneA}, rv: "7"},
	} {
		patch, err := NodeAffinityPatch(tc.terms, tc.rv)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(patch, &u.Object); err != nil {
			t.Fatal(err)
		}
		wantKeys := 1
		if tc.rv != "" {
			wantKeys = 2
		}
		if len(u.Object) != wantKeys || len(u.Object["spec"].(map[string]any)) != 1 {
			t.Fatalf("patch %s touches more than spec.nodeAffinity and the guard", patch)
		}
		if got := u.GetResourceVersion(); got != tc.rv {
			t.Fatalf("patch %s: resourceVersion %q, want %q", patch, got, tc.rv)
		}
		got, err := NodeAffinity(u)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.terms, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip of %v (-sent +read):\n%s", tc.terms, diff)
		}
	}
}
