package snapshotapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPin(t *testing.T) {
	for _, tc := range []struct {
		name       string
		annotation *string
		want       []v1.TopologySelectorTerm
		wantPinned bool
		wantErr    string
	}{
		{name: "no pin"},
		{name: "pinned: no allowedTopologies", annotation: ptr("[]"), wantPinned: true},
		{name: "pinned terms", annotation: ptr(`[{"matchLabelExpressions":[{"key":"topology.kubernetes.io/zone","values":["a"]}]}]`),
			want: []v1.TopologySelectorTerm{zoneOnlyA}, wantPinned: true},
		{name: "not JSON", annotation: ptr("zone-a"), wantPinned: true, wantErr: "annotation " + PinAnnotation},
		{name: "an empty term", annotation: ptr(`[{"matchLabelExpressions":[]}]`), wantPinned: true, wantErr: "must not be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{}
			if tc.annotation != nil {
				obj.Annotations = map[string]string{PinAnnotation: *tc.annotation}
			}
			got, pinned, err := Pin(obj)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !pinned {
					t.Fatalf("Pin = %v, %v, %v; want pinned and an error with %q", got, pinned, err, tc.wantErr)
				}
				return
			}
			if err != nil || pinned != tc.wantPinned || !cmp.Equal(got, tc.want) {
				t.Fatalf("Pin = %v, %v, %v; want %v, %v", got, pinned, err, tc.want, tc.wantPinned)
			}
		})
	}
}

func TestPinValueRoundTrips(t *testing.T) {
	for _, terms := range [][]v1.TopologySelectorTerm{nil, {zoneOnlyA}} {
		value, err := PinValue(terms)
		if err != nil {
			t.Fatal(err)
		}
		got, pinned, err := Pin(&metav1.ObjectMeta{Annotations: map[string]string{PinAnnotation: value}})
		if err != nil || !pinned || !cmp.Equal(got, terms) {
			t.Errorf("PinValue(%v) = %q reads back as %v, %v, %v", terms, value, got, pinned, err)
		}
	}
}

// TestPinPatch: a merge patch of the annotation alone, guarded when a
// resourceVersion is given; removal is a JSON null.
func TestPinPatch(t *testing.T) {
	for _, tc := range []struct {
		value *string
		rv    string
		want  string
	}{
		{value: ptr("[]"), rv: "7", want: `{"metadata":{"annotations":{"zonepath.csi.dev/pinned-topology":"[]"},"resourceVersion":"7"}}`},
		{value: nil, rv: "8", want: `{"metadata":{"annotations":{"zonepath.csi.dev/pinned-topology":null},"resourceVersion":"8"}}`},
		{value: nil, want: `{"metadata":{"annotations":{"zonepath.csi.dev/pinned-topology":null}}}`},
	} {
		patch, err := PinPatch(tc.value, tc.rv)
		if err != nil {
			t.Fatal(err)
		}
		var got, want any
		if err := json.Unmarshal(patch, &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(tc.want), &want)
		if !cmp.Equal(got, want) {
			t.Errorf("PinPatch = %s, want %s", patch, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
