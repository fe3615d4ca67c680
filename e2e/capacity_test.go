package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// notEnoughSpace is kube-scheduler's VolumeBinding reason (v1.37
// pkg/scheduler/framework/plugins/volumebinding binder.go
// ErrReasonNotEnoughSpace) for a node where no CSIStorageCapacity of the
// claim's class and the node's topology is large enough.
const notEnoughSpace = "node(s) did not have enough free storage"

// mebi rounds chosen sizes: drivers round requests up to their own
// granularity, and a size 1 byte above a limit may be rounded onto it.
const mebi = 1 << 20

// segmentRoom is one segment of the driver (topology key → value),
// represented by one of its nodes, and the largest volume its
// CSIStorageCapacity objects admit.
type segmentRoom struct {
	segment driverext.Segment
	node    *v1.Node
	limit   int64
}

func (s segmentRoom) String() string {
	return fmt.Sprintf("%s (node %s): %d bytes", s.segment, s.node.Name, s.limit)
}

// holds says whether node is in the segment.
func (s segmentRoom) holds(node *v1.Node) bool {
	for k, v := range s.segment {
		if node.Labels[k] != v {
			return false
		}
	}
	return true
}

// needStorageCapacity skips unless the extension file declares capacity
// tracking with segments of different room.
func (e *env) needStorageCapacity() {
	if !e.ext.StorageCapacity {
		e2eskipper.Skipf("driver ext: storageCapacity is not set (CSIStorageCapacity objects and segments of different room)")
	}
}

// segmentRooms waits until every segment of the driver (the values of
// its CSINode entry's topologyKeys on each schedulable node that has the
// driver) has a CSIStorageCapacity object of class, and returns each segment's limit
// as the scheduler reads it: maximumVolumeSize, else capacity. Objects
// of any namespace count, as for the scheduler.
func (e *env) segmentRooms(ctx context.Context, class string) []segmentRoom {
	var rooms []segmentRoom
	gomega.Eventually(ctx, func(ctx context.Context) error {
		caps, err := e.f.ClientSet.StorageV1().CSIStorageCapacities("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		rooms = e.driverSegments(ctx)
		for i, r := range rooms {
			limit, ok := roomFor(caps.Items, class, r.node)
			if !ok {
				return fmt.Errorf("no CSIStorageCapacity of class %s covers segment %s", class, r)
			}
			rooms[i].limit = limit
		}
		if len(rooms) == 0 {
			return fmt.Errorf("no schedulable node has the driver in its CSINode")
		}
		return nil
	}).WithTimeout(e.timeout()).WithPolling(poll).Should(gomega.Succeed())
	return rooms
}

// roomFor is the largest limit among the objects of class whose
// nodeTopology selects node, and whether there is one.
func roomFor(caps []storagev1.CSIStorageCapacity, class string, node *v1.Node) (int64, bool) {
	var best int64
	found := false
	for _, c := range caps {
		if c.StorageClassName != class {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.NodeTopology)
		if err != nil || c.NodeTopology == nil || !sel.Matches(labels.Set(node.Labels)) {
			continue
		}
		q := c.MaximumVolumeSize
		if q == nil {
			q = c.Capacity
		}
		if q != nil {
			best, found = max(best, q.Value()), true
		}
	}
	return best, found
}

// driverSegments are the segments of the driver, each with one
// schedulable node in it and no limit yet.
func (e *env) driverSegments(ctx context.Context) []segmentRoom {
	seen := map[string]bool{}
	var out []segmentRoom
	for _, n := range e.schedulableNodes(ctx) {
		entry, _ := e.driverEntry(ctx, n.Name)
		if entry == nil || len(entry.TopologyKeys) == 0 {
			continue
		}
		seg := driverext.Segment{}
		for _, k := range entry.TopologyKeys {
			seg[k] = n.Labels[k]
		}
		if seen[seg.String()] {
			continue
		}
		seen[seg.String()] = true
		out = append(out, segmentRoom{segment: seg, node: n.DeepCopy()})
	}
	return out
}

// sizeFittingTheLargest is the smallest size (in MiB) above every limit
// but the largest: it fits the segments of the largest limit only. It
// fails the spec when all segments have the same room, which would make
// where the pod lands prove nothing.
func sizeFittingTheLargest(rooms []segmentRoom) int64 {
	limits := make([]int64, len(rooms))
	for i, r := range rooms {
		limits[i] = r.limit
	}
	slices.Sort(limits)
	largest := limits[len(limits)-1]
	below := int64(-1)
	for _, l := range limits {
		if l < largest {
			below = l
		}
	}
	if below < 0 {
		framework.Failf("every segment has room for %d bytes (%v): the cluster's segments must differ in room for this spec (driver ext storageCapacity)", largest, rooms)
	}
	return min(largest, (below/mebi+1)*mebi)
}

// waitCapacityPublished waits, for a WaitForFirstConsumer class of a
// driver whose CSIDriver has storageCapacity: true, until every segment
// has its CSIStorageCapacity object: before that the scheduler finds no
// room anywhere ("did not have enough free storage"), and a spec that
// counts a pod's FailedScheduling events would see that refusal.
func (e *env) waitCapacityPublished(ctx context.Context, class string) {
	d, err := e.f.ClientSet.StorageV1().CSIDrivers().Get(ctx, e.driver.GetDriverInfo().Name, metav1.GetOptions{})
	framework.ExpectNoError(err, "reading the CSIDriver")
	if ptr.Deref(d.Spec.StorageCapacity, false) {
		e.segmentRooms(ctx, class)
	}
}

// claimOfSize creates a claim of class requesting size bytes.
func (e *env) claimOfSize(ctx context.Context, name, class string, size int64) {
	claim := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: ptr.To(class),
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(size, resource.BinarySI)}},
		},
	}
	_, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Create(ctx, claim, metav1.CreateOptions{})
	framework.ExpectNoError(err, "creating PVC %s", name)
}

func defineStorageCapacity(e *env) {
	label := ginkgo.Label(labelStorageCapacity)

	ginkgo.It("scenario 22a: places a WaitForFirstConsumer claim only in a segment whose CSIStorageCapacity has room for it", label, func(ctx context.Context) {
		e.needStorageCapacity()
		class := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		rooms := e.segmentRooms(ctx, class)
		size := sizeFittingTheLargest(rooms)
		framework.Logf("segments: %v; claim of %d bytes", rooms, size)
		e.claimOfSize(ctx, "fits", class, size)
		e.pod(ctx, "fits", nil, "fits")
		node := e.waitScheduled(ctx, "fits", e.timeout())
		pv := e.waitBound(ctx, "fits")
		for _, r := range rooms {
			inSegment := pvMatches(pv, r.node.Labels)
			if r.limit < size && inSegment {
				framework.Failf("volume %s (%s) is in segment %s, which has room for %d bytes only, less than the claim's %d", pv.Name, pvAffinity(pv), r.segment, r.limit, size)
			}
			if r.holds(node) && r.limit < size {
				framework.Failf("pod landed on node %s in segment %s, which has room for %d bytes only, less than the claim's %d", node.Name, r.segment, r.limit, size)
			}
		}
		e.expectFirstTry(ctx, "fits", "fits")
	})

	ginkgo.It(`scenario 22b: keeps a claim larger than every segment's CSIStorageCapacity Pending with the scheduler's "did not have enough free storage"`, label, func(ctx context.Context) {
		e.needStorageCapacity()
		class := e.storageClass(ctx, storagev1.VolumeBindingWaitForFirstConsumer, nil)
		rooms := e.segmentRooms(ctx, class)
		largest := slices.MaxFunc(rooms, func(a, b segmentRoom) int { return cmp.Compare(a.limit, b.limit) })
		size := (largest.limit/mebi + 1) * mebi
		framework.Logf("segments: %v; claim of %d bytes", rooms, size)
		e.claimOfSize(ctx, "too-large", class, size)
		e.pod(ctx, "too-large", nil, "too-large")
		e.expectPendingBecause(ctx, "too-large", notEnoughSpace)
		claim, err := e.f.ClientSet.CoreV1().PersistentVolumeClaims(e.ns()).Get(ctx, "too-large", metav1.GetOptions{})
		framework.ExpectNoError(err)
		gomega.Expect(claim.Status.Phase).To(gomega.Equal(v1.ClaimPending), "claim of %d bytes, more than any segment has room for", size)
	})
}
