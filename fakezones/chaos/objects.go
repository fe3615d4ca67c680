package chaos

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

// Namespace is where the workload makes its claims, snapshots and pods.
const Namespace = "chaos"

// prefix names every cluster-scoped object the workload makes.
const prefix = "chaos-"

// The classes the cluster installs (package objects) that cycles use.
const (
	classImmediate     = "zonepath"
	classWFFC          = "zonepath-wffc"
	snapshotClassZonal = "zonepath"
	snapshotClassWide  = "zonepath-region"
)

// where is a zone and its region.
type where struct{ region, zone string }

// term selects one zone of one region, the shape of the driver's zonal
// segments.
func (w where) term() v1.TopologySelectorTerm {
	return v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
		{Key: objects.RegionLabel, Values: []string{w.region}}, {Key: objects.ZoneLabel, Values: []string{w.zone}}}}
}

func terms(ws ...where) []v1.TopologySelectorTerm {
	out := make([]v1.TopologySelectorTerm, len(ws))
	for i, w := range ws {
		out[i] = w.term()
	}
	return out
}

// sourceClass is the Immediate StorageClass that puts a source volume in
// one zone, so that each cycle knows where its data starts.
func sourceClass(w where) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: sourceClassName(w)},
		Provisioner:       objects.Driver,
		ReclaimPolicy:     ptr.To(v1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate),
		AllowedTopologies: []v1.TopologySelectorTerm{w.term()},
	}
}

func sourceClassName(w where) string { return prefix + "src-" + w.zone }

// snapshotClass is a zonal VolumeSnapshotClass of zonepath restricted to
// ws, unstructured as allowedTopologies is not in the typed API.
func snapshotClass(name string, ws ...where) *unstructured.Unstructured {
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotapi.Group + "/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": name}, "driver": objects.Driver, "deletionPolicy": "Delete",
	}}
	_ = unstructured.SetNestedField(class.Object, termsField(terms(ws...)), snapshotapi.AllowedTopologiesPath...)
	return class
}

// termsField is terms as an unstructured field value.
func termsField(ts []v1.TopologySelectorTerm) []any {
	out := make([]any, len(ts))
	for i, t := range ts {
		var exprs []any
		for _, e := range t.MatchLabelExpressions {
			values := make([]any, len(e.Values))
			for j, v := range e.Values {
				values[j] = v
			}
			exprs = append(exprs, map[string]any{"key": e.Key, "values": values})
		}
		out[i] = map[string]any{"matchLabelExpressions": exprs}
	}
	return out
}

// claim is a 1Mi claim of class in Namespace, restored from the
// VolumeSnapshot of that name unless snapshot is empty.
func claim(name, class, snapshot string) *v1.PersistentVolumeClaim {
	return objects.Claim(Namespace, name, class, snapshot, resource.MustParse("1Mi"))
}

// consumer is the pod that makes a WaitForFirstConsumer claim bind: the
// scheduler (zonepath-scheduler, with SnapshotTopology) picks its node,
// kwok runs it.
func consumer(name, pvc string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: pvc}}}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
}
