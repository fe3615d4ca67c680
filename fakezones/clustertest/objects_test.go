package clustertest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

func TestPVCDataSource(t *testing.T) {
	for _, tc := range []struct {
		snapshot string
		want     *v1.TypedLocalObjectReference
	}{
		{"", nil},
		{"snap-1", &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: "snap-1"}},
	} {
		got := PVC("pvc", "zonepath", tc.snapshot)
		if diff := cmp.Diff(tc.want, got.Spec.DataSource); diff != "" {
			t.Errorf("PVC(snapshot %q) dataSource (-want +got):\n%s", tc.snapshot, diff)
		}
		if *got.Spec.StorageClassName != "zonepath" || got.Namespace != Namespace {
			t.Errorf("PVC(snapshot %q) = class %s in %s", tc.snapshot, *got.Spec.StorageClassName, got.Namespace)
		}
	}
}
