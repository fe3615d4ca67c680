package provisioner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/zonepath/zonepath/driver/drivertest"
)

// zoneNode is a node of the driver in region/zone: its Node with the
// topology labels and its CSINode naming the driver's topology keys, as
// kubelet's registration leaves them.
func zoneNode(driver, region, zone string) []runtime.Object {
	name := "node-" + zone
	labels := map[string]string{regionKey: region, zoneKey: zone}
	return []runtime.Object{
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}},
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: driver, NodeID: name, TopologyKeys: []string{regionKey, zoneKey}},
		}}},
	}
}

// generateNames names objects created with generateName, which the fake
// clientset leaves empty; upstream's controller creates its objects so.
func generateNames(kube *fake.Clientset) {
	n := 0
	kube.PrependReactor("create", "csistoragecapacities", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*storagev1.CSIStorageCapacity)
		if obj.Name == "" {
			n++
			obj.Name = fmt.Sprintf("%s%d", obj.GenerateName, n)
		}
		return false, nil, nil
	})
}

// TestCapacityPerZone runs upstream's capacity controller, as Run wires
// it, against the real driver whose zone-c holds 2Gi: it must publish one
// CSIStorageCapacity per zone with a node of the driver, for the
// WaitForFirstConsumer class only (the scheduler reads no other), with the
// driver's GetCapacity for that zone, and without an owner at level -1.
// A volume created in zone-c must lower its object at the next poll.
func TestCapacityPerZone(t *testing.T) {
	d := drivertest.Start(t, drivertest.Options{World: drivertest.World("capacity: 2Gi")})
	conn := d.Conn(t)
	driver := &driver{conn: conn, name: "zonepath.csi.dev"}
	late := storageClass(storagev1.VolumeBindingWaitForFirstConsumer, nil)
	immediate := storageClass(storagev1.VolumeBindingImmediate, nil)
	immediate.Name = "immediate"
	objects := []runtime.Object{late, immediate}
	for _, z := range [][2]string{{"region-1", "zone-a"}, {"region-1", "zone-c"}, {"region-2", "zone-d"}} {
		objects = append(objects, zoneNode(driver.name, z[0], z[1])...)
	}
	kube := fake.NewClientset(objects...)
	generateNames(kube)
	k := newCaches(kube, driver)
	cfg := Config{Timeout: 10 * time.Second, CapacityPollInterval: 200 * time.Millisecond,
		RetryIntervalStart: 10 * time.Millisecond, RetryIntervalMax: time.Second}
	tracking := newCapacityTracking(cfg, kube, "zonepath-system", nil, driver, k)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	tracking.objects.Start(ctx.Done())
	go tracking.topology.RunWorker(ctx)
	go tracking.controller.Run(ctx, 1, nil)
	if err := k.start(ctx); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{"zone-a": "1Pi", "zone-c": "2Gi", "zone-d": "1Pi"}
	waitForCapacities(t, kube, want)
	createIn(t, conn, "zone-c", 1<<30)
	want["zone-c"] = "1Gi"
	waitForCapacities(t, kube, want)
}

// createIn creates a volume of size bytes in region-1's zone.
func createIn(t *testing.T, conn csiConn, zone string, size int64) {
	t.Helper()
	c := csi.NewControllerClient(conn)
	req := drivertest.VolumeRequest("in-"+zone, size, drivertest.Requisite(drivertest.Segment(regionKey, "region-1", zoneKey, zone)))
	if _, err := c.CreateVolume(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

// waitForCapacities waits until the objects of class "sc" are exactly
// want (zone → capacity and maximumVolumeSize), and fails if an object
// belongs to another class, has an owner or lacks the labels.
func waitForCapacities(t *testing.T, kube *fake.Clientset, want map[string]string) {
	t.Helper()
	var got map[string]string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := kube.StorageV1().CSIStorageCapacities("zonepath-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = map[string]string{}
		for _, c := range list.Items {
			if err := checkCapacityObject(c); err != nil {
				t.Fatal(err)
			}
			zone := c.NodeTopology.MatchLabels[zoneKey]
			got[zone] = c.Capacity.String()
			if c.MaximumVolumeSize == nil || c.MaximumVolumeSize.Cmp(*c.Capacity) != 0 {
				got[zone] += fmt.Sprintf(" (maximumVolumeSize %v)", c.MaximumVolumeSize)
			}
		}
		return maps.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("CSIStorageCapacity objects by zone: got %v, want %v (%v)", got, want, err)
	}
}

func checkCapacityObject(c storagev1.CSIStorageCapacity) error {
	switch {
	case c.StorageClassName != "sc":
		return fmt.Errorf("object %s for class %q: only WaitForFirstConsumer class sc needs capacity", c.Name, c.StorageClassName)
	case len(c.OwnerReferences) != 0:
		return fmt.Errorf("object %s has owners %v at level -1", c.Name, c.OwnerReferences)
	case c.Labels["csi.storage.k8s.io/drivername"] != "zonepath.csi.dev" || c.Labels["csi.storage.k8s.io/managed-by"] != managedBy:
		return fmt.Errorf("object %s labels %v", c.Name, c.Labels)
	case c.NodeTopology == nil || !slices.Equal(slices.Sorted(maps.Keys(c.NodeTopology.MatchLabels)), []string{regionKey, zoneKey}):
		return fmt.Errorf("object %s nodeTopology %v: want the region and zone of one segment", c.Name, c.NodeTopology)
	case c.Capacity == nil:
		return fmt.Errorf("object %s without capacity", c.Name)
	}
	return nil
}

// TestCapacityOwner: level -1 needs nothing, any other level needs
// POD_NAME, whose absence is an error naming it instead of objects
// without the owner the flag asked for.
func TestCapacityOwner(t *testing.T) {
	t.Setenv("POD_NAME", "")
	if ref, err := capacityOwner(nil, "ns", -1); ref != nil || err != nil {
		t.Fatalf("level -1: %v, %v; want no owner and no error", ref, err)
	}
	if _, err := capacityOwner(nil, "ns", 2); err == nil {
		t.Fatal("level 2 without POD_NAME: no error")
	}
}

// TestCapacityNeedsNamespace: --enable-capacity without $NAMESPACE is an
// error, and without the flag nothing is read.
func TestCapacityNeedsNamespace(t *testing.T) {
	t.Setenv("NAMESPACE", "")
	if tr, err := capacityOf(context.Background(), Config{}, nil, nil, nil); tr != nil || err != nil {
		t.Fatalf("capacity off: %v, %v", tr, err)
	}
	cfg := Config{EnableCapacity: true, CapacityOwnerrefLevel: -1}
	if _, err := capacityOf(context.Background(), cfg, nil, nil, nil); err == nil {
		t.Fatal("--enable-capacity without NAMESPACE: no error")
	}
}
