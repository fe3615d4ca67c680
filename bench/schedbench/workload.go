package schedbench

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// Labels of the objects the benchmark creates.
const (
	// phaseLabel names the phase a pod or claim belongs to, for watching
	// and for cleaning up.
	phaseLabel = "schedbench.zonepath.csi.dev/phase"
	// snapshotLabel names the VolumeSnapshot a snapshot pod's claim
	// restores from, to check where the pod landed.
	snapshotLabel = "schedbench.zonepath.csi.dev/snapshot"
	// ownedLabel marks every object of the benchmark.
	ownedLabel = "schedbench.zonepath.csi.dev/owned"
)

// provisioner is the provisioner of the benchmark's StorageClass. No
// provisioner serves it: the benchmark's binder plays one, the same way
// for both schedulers, so that the run measures the scheduler and not a
// provisioner (as scheduler_perf does).
const provisioner = "schedbench.zonepath.csi.dev"

// newStorageClass is the WaitForFirstConsumer class of the snapshot pods'
// claims. It has no allowedTopologies: the snapshot alone restricts
// where a pod may go.
func newStorageClass(name string) *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name, Labels: map[string]string{ownedLabel: "true"}},
		Provisioner:       provisioner,
		ReclaimPolicy:     ptr.To(v1.PersistentVolumeReclaimRetain),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	}
}

// workload says what one phase creates.
type workload struct {
	Namespace, Phase, SchedulerName string
	Class                           podClass
	Pods                            int
	// StorageClass and Snapshots are for snapshot pods: pod i's claim
	// restores from Snapshots[i % len(Snapshots)].
	StorageClass string
	Snapshots    []string
}

func (w workload) labels() map[string]string {
	return map[string]string{phaseLabel: w.Phase, ownedLabel: "true"}
}

// pod is the i-th pod: a small container request, the scheduler's name,
// and for snapshot pods the claim claim(i).
func (w workload) pod(i int) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%05d", w.Phase, w.Class, i), Namespace: w.Namespace, Labels: w.labels()},
		Spec: v1.PodSpec{
			SchedulerName: w.SchedulerName,
			Containers: []v1.Container{{Name: "c", Image: "schedbench", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("16Mi")}}}},
		},
	}
	if w.Class == snapshotPods {
		claim := w.claim(i)
		pod.Labels[snapshotLabel] = claim.Labels[snapshotLabel]
		pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}
	}
	return pod
}

// claim is the claim of the i-th snapshot pod.
func (w workload) claim(i int) *v1.PersistentVolumeClaim {
	snapshot := w.Snapshots[i%len(w.Snapshots)]
	labels := w.labels()
	labels[snapshotLabel] = snapshot
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-claim-%05d", w.Phase, i), Namespace: w.Namespace, Labels: labels},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(w.StorageClass),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
			DataSource:       &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: snapshot},
		},
	}
}

// create creates the phase's claims, then its pods, workers at a time.
func (w workload) create(ctx context.Context, kube kubernetes.Interface, workers int) error {
	if w.Class == snapshotPods {
		if err := createN(ctx, "claims", w.Pods, workers, w.claim, kube.CoreV1().PersistentVolumeClaims(w.Namespace).Create); err != nil {
			return err
		}
	}
	return createN(ctx, "pods", w.Pods, workers, w.pod, kube.CoreV1().Pods(w.Namespace).Create)
}

// createN creates object(0) ... object(n-1), workers at a time.
func createN[T any](ctx context.Context, what string, n, workers int, object func(int) T,
	create func(context.Context, T, metav1.CreateOptions) (T, error)) error {
	if err := parallel(ctx, n, workers, func(i int) error {
		_, err := create(ctx, object(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	return nil
}

// parallel calls do(0) ... do(n-1) from workers goroutines and returns
// the first error; after an error the remaining calls are skipped.
func parallel(ctx context.Context, n, workers int, do func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range work {
				if err := do(i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}
