package objects

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// Driver is the CSI driver the cluster installs.
const Driver = "zonepath.csi.dev"

// Labels and annotations of a kwok node.
const (
	ZoneLabel      = "topology.kubernetes.io/zone"
	RegionLabel    = "topology.kubernetes.io/region"
	KwokAnnotation = "kwok.x-k8s.io/node"
	// ControllerAttachAnnotation is the annotation kubelet puts on its
	// Node when the attach-detach controller attaches its volumes
	// (kubelet --enable-controller-attach-detach); spec.File.ControllerAttachDetach.
	ControllerAttachAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"
)

// Clients are the API clients objects uses.
type Clients struct {
	Kube       kubernetes.Interface
	Extensions apiextensions.Interface
	Dynamic    dynamic.Interface
}

// ReadCRDs reads every CRD in dir (*.yaml), so that a missing or broken
// CRD directory is reported before any process starts.
func ReadCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue // the upstream directory's index, not a CRD
		}
		crd, err := readCRD(f)
		if err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRDs (*.yaml) in %s: run make crds", dir)
	}
	return crds, nil
}

// InstallCRDs creates crds and waits until each is established, so that
// objects of its kinds can be created right after.
func InstallCRDs(ctx context.Context, c Clients, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := createAll(ctx, "CRD", crds, c.Extensions.ApiextensionsV1().CustomResourceDefinitions().Create); err != nil {
		return err
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, c, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.Name == "" {
		return nil, fmt.Errorf("%s: not a CustomResourceDefinition", path)
	}
	return crd, nil
}

func waitEstablished(ctx context.Context, c Clients, name string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		crd, err := c.Extensions.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// create creates obj with a client's Create and treats AlreadyExists as
// success, so that installing into a cluster that has the object is not
// an error; kind names the object in the error.
func create[T metav1.Object](ctx context.Context, kind string, obj T, createFn func(context.Context, T, metav1.CreateOptions) (T, error)) error {
	if _, err := createFn(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// createAll creates objs in order, stopping at the first error.
func createAll[T metav1.Object](ctx context.Context, kind string, objs []T, createFn func(context.Context, T, metav1.CreateOptions) (T, error)) error {
	for _, obj := range objs {
		if err := create(ctx, kind, obj, createFn); err != nil {
			return err
		}
	}
	return nil
}

// perDriver is what of gives for every driver of cl, in cl.Drivers' order.
func perDriver[T any](cl *spec.Cluster, of func(cl *spec.Cluster, driver string) []T) []T {
	var out []T
	for _, driver := range cl.Drivers() {
		out = append(out, of(cl, driver)...)
	}
	return out
}

// InstallStorage creates the CSIDrivers and the StorageClasses.
func InstallStorage(ctx context.Context, c Clients, cl *spec.Cluster) error {
	var drivers []*storagev1.CSIDriver
	for _, name := range cl.Drivers() {
		drivers = append(drivers, CSIDriver(name, cl.SchedulesByCapacity()))
	}
	if err := createAll(ctx, "CSIDriver", drivers, c.Kube.StorageV1().CSIDrivers().Create); err != nil {
		return err
	}
	return createAll(ctx, "StorageClass", StorageClasses(cl), c.Kube.StorageV1().StorageClasses().Create)
}

// CSIDriver is the CSIDriver object of every zonepath instance;
// storageCapacity says whether the scheduler reads CSIStorageCapacity.
func CSIDriver(name string, storageCapacity bool) *storagev1.CSIDriver {
	return &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired:       ptr.To(true),
			PodInfoOnMount:       ptr.To(false),
			VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			// The provisioners publish CSIStorageCapacity objects
			// (cluster: --enable-capacity); the scheduler reads them.
			StorageCapacity: ptr.To(storageCapacity),
		},
	}
}

// classPrefix is the first part of the names of a driver's classes:
// "zonepath" for zonepath itself, the driver's name for an extra one.
func classPrefix(driver string) string {
	if driver == Driver {
		return "zonepath"
	}
	return driver
}

// StorageClasses are, for every driver of the cluster, <prefix>
// (Immediate) and <prefix>-wffc (WaitForFirstConsumer), each also as
// <name>-<first zone> restricted to the first zone; the prefix is
// classPrefix. zonepath-wffc is the default class.
func StorageClasses(cl *spec.Cluster) []*storagev1.StorageClass {
	return perDriver(cl, storageClasses)
}

func storageClasses(cl *spec.Cluster, driver string) []*storagev1.StorageClass {
	zone := spec.ZoneName(0)
	var out []*storagev1.StorageClass
	for _, mode := range []storagev1.VolumeBindingMode{storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer} {
		name := classPrefix(driver)
		if mode == storagev1.VolumeBindingWaitForFirstConsumer {
			name += "-wffc"
		}
		base := &storagev1.StorageClass{
			ObjectMeta:        metav1.ObjectMeta{Name: name},
			Provisioner:       driver,
			ReclaimPolicy:     ptr.To(v1.PersistentVolumeReclaimDelete),
			VolumeBindingMode: ptr.To(mode),
			// zonepath-resizer runs beside the other sidecars.
			AllowVolumeExpansion: ptr.To(true),
		}
		if mode == storagev1.VolumeBindingWaitForFirstConsumer && driver == Driver {
			base.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		zonal := base.DeepCopy()
		zonal.Name += "-" + zone
		zonal.Annotations = nil
		zonal.AllowedTopologies = []v1.TopologySelectorTerm{zoneTerm(cl, 0)}
		out = append(out, base, zonal)
	}
	return out
}

// zoneTerm selects the i-th zone, with its region unless the driver
// reports none: the shape, under the driver's keys, it reports for a
// zonal segment. Under keys.omitZone that is the zone's region alone.
func zoneTerm(cl *spec.Cluster, i int) v1.TopologySelectorTerm {
	var term v1.TopologySelectorTerm
	if !cl.Keys.OmitRegion {
		term.MatchLabelExpressions = append(term.MatchLabelExpressions, v1.TopologySelectorLabelRequirement{Key: cl.Keys.Region, Values: []string{cl.RegionOf(i)}})
	}
	if !cl.Keys.OmitZone {
		term.MatchLabelExpressions = append(term.MatchLabelExpressions, v1.TopologySelectorLabelRequirement{Key: cl.Keys.Zone, Values: []string{spec.ZoneName(i)}})
	}
	return term
}

// InstallSnapshotClasses creates the VolumeSnapshotClasses of every
// driver: <prefix> (the driver's default), <prefix>-<first zone> with
// allowedTopologies for the first zone, and <prefix>-region taking
// region-wide snapshots; the prefix is classPrefix.
func InstallSnapshotClasses(ctx context.Context, c Clients, cl *spec.Cluster) error {
	// A dynamic client's Create takes subresources too.
	classes := c.Dynamic.Resource(snapshotapi.VolumeSnapshotClasses)
	return createAll(ctx, "VolumeSnapshotClass", SnapshotClasses(cl),
		func(ctx context.Context, vsc *unstructured.Unstructured, o metav1.CreateOptions) (*unstructured.Unstructured, error) {
			return classes.Create(ctx, vsc, o)
		})
}

// SnapshotClasses are the VolumeSnapshotClasses InstallSnapshotClasses
// creates, unstructured because allowedTopologies is not in the typed API.
func SnapshotClasses(cl *spec.Cluster) []*unstructured.Unstructured {
	return perDriver(cl, snapshotClasses)
}

func snapshotClasses(cl *spec.Cluster, driver string) []*unstructured.Unstructured {
	class := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": snapshotapi.Group + "/v1", "kind": "VolumeSnapshotClass",
			"metadata": map[string]any{"name": name}, "driver": driver, "deletionPolicy": "Delete",
		}}
	}
	prefix := classPrefix(driver)
	// The snapshot controller picks the default class among those of the
	// claim's driver, so every driver has its own.
	def := class(prefix)
	def.SetAnnotations(map[string]string{"snapshot.storage.kubernetes.io/is-default-class": "true"})
	zonal := class(prefix + "-" + spec.ZoneName(0))
	var exprs []any
	for _, e := range zoneTerm(cl, 0).MatchLabelExpressions {
		exprs = append(exprs, map[string]any{"key": e.Key, "values": []any{e.Values[0]}})
	}
	zonal.Object["allowedTopologies"] = []any{map[string]any{"matchLabelExpressions": exprs}}
	if cl.Keys.OmitRegion {
		return []*unstructured.Unstructured{def, zonal} // no region to be usable from
	}
	region := class(prefix + "-region")
	region.Object["parameters"] = map[string]any{"zonepath.csi.dev/snapshotScope": "region"}
	return []*unstructured.Unstructured{def, zonal, region}
}

// SchedulerUser is the identity of the cluster's scheduler.
const SchedulerUser = "system:kube-scheduler"

// InstallRBAC lets the scheduler read snapshots, which the
// SnapshotTopology plugin resolves and kube-scheduler's own role does not
// cover.
func InstallRBAC(ctx context.Context, c Clients) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "zonepath:snapshot-topology-scheduler"},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{snapshotapi.Group},
			Resources: []string{"volumesnapshots", "volumesnapshotcontents"},
			Verbs:     []string{"get", "list", "watch"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: SchedulerUser}},
	}
	if err := create(ctx, "ClusterRole", role, c.Kube.RbacV1().ClusterRoles().Create); err != nil {
		return err
	}
	return create(ctx, "ClusterRoleBinding", binding, c.Kube.RbacV1().ClusterRoleBindings().Create)
}

// CreateNodes creates the cluster's kwok nodes, zone-labelled, a few at a
// time; progress, when set, is told how many are created after each one
// (from one goroutine).
func CreateNodes(ctx context.Context, c Clients, cl *spec.Cluster, progress func(created int)) error {
	const workers = 32
	work := make(chan spec.Node)
	results := make(chan error)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for n := range work {
				results <- create(ctx, "Node", Node(n), c.Kube.CoreV1().Nodes().Create)
			}
		})
	}
	go func() {
		// Once ctx is done every create fails at once, so this ends.
		for _, n := range cl.Nodes {
			work <- n
		}
		close(work)
		wg.Wait()
		close(results)
	}()
	var msgs []string
	created := 0
	for err := range results {
		if err != nil {
			msgs = append(msgs, err.Error())
			continue
		}
		created++
		if progress != nil {
			progress(created)
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%d of %d nodes: %s", len(msgs), len(cl.Nodes), strings.Join(msgs[:min(3, len(msgs))], "; "))
	}
	return nil
}

// Node is the Node object of a fake node: kwok manages it (annotation),
// it carries the well-known topology labels unless the cluster file says
// not to (spec.File.WellKnownNodeLabels), and its status has room for
// pods. It is created Ready, with the status kwok's node-initialize stage
// would give it (conditions, address, node info, phase), as a kubelet
// posts its Node with a status: kwok would otherwise patch every new
// Node's status once more, and the node lifecycle controller taint and
// untaint it meanwhile, most of the API server's work at a thousand
// nodes. kwok keeps its lease and heartbeats.
func Node(n spec.Node) *v1.Node {
	node := node(n)
	if n.WellKnownLabels {
		node.Labels[RegionLabel], node.Labels[ZoneLabel] = n.Region, n.Zone
	}
	if n.ControllerAttachDetach {
		node.Annotations[ControllerAttachAnnotation] = "true"
	}
	return node
}

func node(n spec.Node) *v1.Node {
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("32"),
		v1.ResourceMemory: resource.MustParse("256Gi"),
		v1.ResourcePods:   resource.MustParse("110"),
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name,
			Labels: map[string]string{
				"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				// As kubelet labels its Node: else the node lifecycle
				// controller patches every Node to add them.
				"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
				"type": "kwok",
			},
			Annotations: map[string]string{KwokAnnotation: "fake"},
		},
		Status: v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: readyConditions(metav1.Now()),
			Addresses:  []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: n.Name}},
			NodeInfo: v1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux",
				KubeletVersion: "fakezones", KubeProxyVersion: "fakezones", ContainerRuntimeVersion: "fakezones", KernelVersion: "fakezones"},
			Phase: v1.NodeRunning,
		},
	}
}

// readyConditions are a healthy node's conditions, as of now.
func readyConditions(now metav1.Time) []v1.NodeCondition {
	c := func(t v1.NodeConditionType, s v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return []v1.NodeCondition{
		c(v1.NodeReady, v1.ConditionTrue, "KubeletReady", "the fake node is ready"),
		c(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "no memory pressure"),
		c(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "no disk pressure"),
		c(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "no PID pressure"),
		c(v1.NodeNetworkUnavailable, v1.ConditionFalse, "RouteCreated", "the network is up"),
	}
}

// Claim is a ReadWriteOnce claim of size in class, restored from the
// VolumeSnapshot of that name in its namespace unless snapshot is empty:
// what the cluster's tests and make chaos's workload provision.
func Claim(namespace, name, class, snapshot string, size resource.Quantity) *v1.PersistentVolumeClaim {
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
		},
	}
	if snapshot != "" {
		pvc.Spec.DataSource = &v1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: "VolumeSnapshot", Name: snapshot}
	}
	return pvc
}

// VolumeSnapshot is a snapshot of the claim pvc in class, or in the
// default VolumeSnapshotClass of the claim's driver when class is empty.
// It is unstructured as the snapshot API has no typed client in this
// module.
func VolumeSnapshot(namespace, name, pvc, class string) *unstructured.Unstructured {
	spec := map[string]any{"source": map[string]any{"persistentVolumeClaimName": pvc}}
	if class != "" {
		spec["volumeSnapshotClassName"] = class
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": snapshotapi.Group + "/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     spec,
	}}
}
