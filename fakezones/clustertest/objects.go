package clustertest

import (
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/objects"
)

// Namespace is where the kit creates namespaced objects.
const Namespace = "default"

// PVC is a 1Gi ReadWriteOnce claim of class in Namespace, restored from
// the VolumeSnapshot of that name when snapshot is not empty.
func PVC(name, class, snapshot string) *v1.PersistentVolumeClaim {
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if snapshot != "" {
		pvc.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: snapshot}
	}
	return pvc
}

// VolumeSnapshot is a snapshot of the claim pvc in Namespace, in the
// default VolumeSnapshotClass of the claim's driver. It is unstructured
// as the snapshot API has no typed client in this module.
func VolumeSnapshot(name, pvc string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotapi.Group + "/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": name, "namespace": Namespace},
		"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": pvc}},
	}}
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
