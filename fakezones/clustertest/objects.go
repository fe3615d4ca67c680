package clustertest

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/zonepath/zonepath/fakezones/objects"
)

// Namespace is where the kit creates namespaced objects.
const Namespace = "default"

// PVC is a 1Gi ReadWriteOnce claim of class in Namespace, restored from
// the VolumeSnapshot of that name when snapshot is not empty.
func PVC(name, class, snapshot string) *v1.PersistentVolumeClaim {
	return objects.Claim(Namespace, name, class, snapshot, resource.MustParse("1Gi"))
}

// VolumeSnapshot is a snapshot of the claim pvc in Namespace, in the
// default VolumeSnapshotClass of the claim's driver.
func VolumeSnapshot(name, pvc string) *unstructured.Unstructured {
	return objects.VolumeSnapshot(Namespace, name, pvc, "")
}

// ZonalStorageClass is an Immediate class of provisioner whose
// allowedTopologies is the one zone.
func ZonalStorageClass(name, provisioner, zone string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner,
		AllowedTopologies: []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
			{Key: objects.ZoneLabel, Values: []string{zone}}}}},
	}
}
