package objects

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/zonepath/zonepath/fakezones/spec"
)

func cluster(t *testing.T) *spec.Cluster {
	t.Helper()
	cl, err := spec.File{Zones: 2, NodesPerZone: 1, ExtraDrivers: []spec.ExtraDriver{{Name: "extra.csi.dev"}}}.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestClassesPerDriver: every driver has its classes, zonepath's first.
func TestClassesPerDriver(t *testing.T) {
	cl := cluster(t)
	var storage, snapshot []string
	for _, sc := range StorageClasses(cl) {
		storage = append(storage, sc.Name)
	}
	for _, vsc := range SnapshotClasses(cl) {
		snapshot = append(snapshot, vsc.GetName())
	}
	want := []string{"zonepath", "zonepath-zone-a", "zonepath-wffc", "zonepath-wffc-zone-a",
		"extra.csi.dev", "extra.csi.dev-zone-a", "extra.csi.dev-wffc", "extra.csi.dev-wffc-zone-a"}
	if diff := cmp.Diff(want, storage); diff != "" {
		t.Errorf("StorageClasses (-want +got):\n%s", diff)
	}
	want = []string{"zonepath", "zonepath-zone-a", "zonepath-region", "extra.csi.dev", "extra.csi.dev-zone-a", "extra.csi.dev-region"}
	if diff := cmp.Diff(want, snapshot); diff != "" {
		t.Errorf("SnapshotClasses (-want +got):\n%s", diff)
	}
}

// TestInstallStorage: installing twice is no error (AlreadyExists is
// success); any other error stops the install and names the object.
func TestInstallStorage(t *testing.T) {
	cl := cluster(t)
	kube := fake.NewClientset()
	for range 2 {
		if err := InstallStorage(context.Background(), Clients{Kube: kube}, cl); err != nil {
			t.Fatalf("InstallStorage: %v", err)
		}
	}
	classes, _ := kube.StorageV1().StorageClasses().List(context.Background(), metav1.ListOptions{})
	drivers, _ := kube.StorageV1().CSIDrivers().List(context.Background(), metav1.ListOptions{})
	if len(classes.Items) != 8 || len(drivers.Items) != 2 {
		t.Errorf("%d StorageClasses and %d CSIDrivers, want 8 and 2", len(classes.Items), len(drivers.Items))
	}

	broken := fake.NewClientset()
	broken.PrependReactor("create", "storageclasses", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	err := InstallStorage(context.Background(), Clients{Kube: broken}, cl)
	if err == nil || !strings.Contains(err.Error(), "creating StorageClass zonepath: quota exceeded") {
		t.Fatalf("InstallStorage with a failing API = %v, want the StorageClass named", err)
	}
}

func TestVolumeSnapshotClass(t *testing.T) {
	for _, class := range []string{"", "zonepath-region"} {
		vs := VolumeSnapshot("ns", "snap", "pvc", class)
		got, found, _ := unstructured.NestedString(vs.Object, "spec", "volumeSnapshotClassName")
		if got != class || found != (class != "") {
			t.Errorf("VolumeSnapshot(class %q) has class %q (set: %v): an empty class must be left out for the driver's default", class, got, found)
		}
		if pvc, _, _ := unstructured.NestedString(vs.Object, "spec", "source", "persistentVolumeClaimName"); pvc != "pvc" || vs.GetNamespace() != "ns" {
			t.Errorf("VolumeSnapshot(class %q) = %v", class, vs.Object)
		}
	}
}
