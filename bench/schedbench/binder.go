package schedbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// volumeLabel marks the PersistentVolumes the binder creates.
const volumeLabel = "schedbench.zonepath.csi.dev/volume"

// binder stands in for a provisioner and the PV controller for claims of
// the benchmark's provisioner: when the scheduler's VolumeBinding plugin
// selects a node for a claim, it creates a PersistentVolume in that
// node's zone, pre-bound to the claim, and completes the binding on both
// objects (the fields VolumeBinding's PreBind waits for, and the
// statuses, so that kube-controller-manager's PV controller finds nothing
// to write). It does the same for both schedulers, so that both runs pay
// the same for binding and neither waits on a real provisioner.
type binder struct {
	kube kubernetes.Interface
	// nodes are the labels of every node by name.
	nodes map[string]labels.Set
	// workers bind that many claims at a time.
	workers int
	// errors gets a line per failed binding; the claim is retried.
	errors io.Writer
	bound  atomic.Int64
}

// claimsBound is how many claims the binder has bound.
func (b *binder) claimsBound() int64 { return b.bound.Load() }

// run binds claims until ctx ends.
func (b *binder) run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(b.kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = ownedLabel + "=true" }))
	claims := factory.Core().V1().PersistentVolumeClaims()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if pvc, ok := obj.(*v1.PersistentVolumeClaim); ok && needsVolume(pvc) {
			queue.Add(types.NamespacedName{Namespace: pvc.Namespace, Name: pvc.Name})
		}
	}
	if _, err := claims.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), claims.Informer().HasSynced) {
		return fmt.Errorf("binder: claim informer did not sync")
	}
	for range b.workers {
		go b.work(ctx, queue, claims.Lister())
	}
	<-ctx.Done()
	return nil
}

// needsVolume: the scheduler has chosen a node and nothing is bound yet.
func needsVolume(pvc *v1.PersistentVolumeClaim) bool {
	return pvc.Annotations[volume.AnnSelectedNode] != "" && pvc.Spec.VolumeName == "" && pvc.DeletionTimestamp == nil
}

func (b *binder) work(ctx context.Context, queue workqueue.TypedRateLimitingInterface[types.NamespacedName],
	lister corelisters.PersistentVolumeClaimLister) {
	for {
		key, quit := queue.Get()
		if quit {
			return
		}
		pvc, err := lister.PersistentVolumeClaims(key.Namespace).Get(key.Name)
		if err == nil && needsVolume(pvc) {
			err = b.bind(ctx, pvc)
		}
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			fmt.Fprintf(b.errors, "binder: %s: %v\n", key, err)
			queue.AddRateLimited(key)
		} else {
			queue.Forget(key)
		}
		queue.Done(key)
	}
}

// bind creates the claim's volume in the zone of its selected node and
// binds both: the volume's claimRef (with the claim's UID, so that the PV
// controller takes it as pre-bound to exactly this claim) and status,
// then the claim's volumeName, bind-completed annotation and status.
func (b *binder) bind(ctx context.Context, pvc *v1.PersistentVolumeClaim) error {
	node := pvc.Annotations[volume.AnnSelectedNode]
	nodeLabels, ok := b.nodes[node]
	if !ok {
		return fmt.Errorf("selected node %s is not a node of the cluster", node)
	}
	pvs := b.kube.CoreV1().PersistentVolumes()
	pv, err := pvs.Create(ctx, volumeFor(pvc, nodeLabels), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		pv, err = pvs.Get(ctx, volumeName(pvc), metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	// Merge patches: kube-controller-manager writes these objects too
	// (the storage-provisioner annotation, phases), and the binder must
	// not lose a race to it.
	if _, err := pvs.Patch(ctx, pv.Name, types.MergePatchType, mergePatch(map[string]any{"status": map[string]any{"phase": v1.VolumeBound}}),
		metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	claims := b.kube.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	spec := mergePatch(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{volume.AnnBindCompleted: "yes"}},
		"spec":     map[string]any{"volumeName": pv.Name}})
	if _, err := claims.Patch(ctx, pvc.Name, types.MergePatchType, spec, metav1.PatchOptions{}); err != nil {
		return err
	}
	status := mergePatch(map[string]any{"status": map[string]any{
		"phase": v1.ClaimBound, "accessModes": pv.Spec.AccessModes, "capacity": pv.Spec.Capacity}})
	if _, err := claims.Patch(ctx, pvc.Name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		return err
	}
	b.bound.Add(1)
	return nil
}

func volumeName(pvc *v1.PersistentVolumeClaim) string { return "schedbench-" + string(pvc.UID) }

// volumeFor is the PersistentVolume of pvc on a node with nodeLabels: a
// local volume (nothing attaches it) whose nodeAffinity is the node's
// region and zone, as a zonal provisioner would create it.
func volumeFor(pvc *v1.PersistentVolumeClaim, nodeLabels labels.Set) *v1.PersistentVolume {
	var terms []v1.NodeSelectorRequirement
	for _, key := range []string{v1.LabelTopologyRegion, v1.LabelTopologyZone} {
		terms = append(terms, v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: []string{nodeLabels[key]}})
	}
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: volumeName(pvc), Labels: map[string]string{volumeLabel: "true", ownedLabel: "true"}},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      pvc.Spec.Resources.Requests,
			AccessModes:                   pvc.Spec.AccessModes,
			StorageClassName:              ptr.Deref(pvc.Spec.StorageClassName, ""),
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/schedbench"}},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: terms}}}},
		},
	}
}

// mergePatch is patch as a JSON merge patch.
func mergePatch(patch map[string]any) []byte {
	data, err := json.Marshal(patch)
	if err != nil {
		panic(err) // maps of strings and API types always marshal
	}
	return data
}
