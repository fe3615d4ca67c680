package snapshotter

import (
	"context"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

// recordTimeout bounds the API calls that record topology. They run
// detached from the CSI call's context: a CreateSnapshot that succeeded
// near its deadline must still get its nodeAffinity written.
const recordTimeout = 30 * time.Second

// record writes the driver's accessible_topology to the content's
// spec.nodeAffinity unless the content already has one
// (controllers/README.md, "Recording accessible_topology").
func (s *Snapshotter) record(ctx context.Context, target *createTarget, segments []*csi.Topology) error {
	terms, err := topology.FromCSI(segments)
	if err != nil {
		return fmt.Errorf("driver %s returned an unusable accessible_topology for VolumeSnapshotContent %s: %w", s.driver, target.content, err)
	}
	if len(terms) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return s.patchIfAbsent(ctx, target.content, terms)
	})
	if err != nil {
		return fmt.Errorf("recording nodeAffinity on VolumeSnapshotContent %s: %w", target.content, err)
	}
	return nil
}

// patchIfAbsent reads the content and, when it has no nodeAffinity, sets
// it with a merge patch guarded by the resourceVersion just read, so a
// value written in between is never overwritten. An empty list
// (nodeAffinity: []) counts as absent, as it does for the provisioner and
// the scheduler ("no constraint"): keeping it as an admin's value would
// leave the snapshot restorable anywhere instead of where the driver put
// it.
func (s *Snapshotter) patchIfAbsent(ctx context.Context, name string, terms []v1.TopologySelectorTerm) error {
	logger := klog.FromContext(ctx).WithValues("content", name)
	contents := s.client.Resource(snapshotapi.VolumeSnapshotContents)
	content, err := contents.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	existing, err := snapshotapi.NodeAffinity(content)
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		logger.V(2).Info("Keeping the nodeAffinity already set", "nodeAffinity", existing, "driverTopology", terms)
		return nil
	}
	patch, err := snapshotapi.NodeAffinityPatch(terms, content.GetResourceVersion())
	if err != nil {
		return err
	}
	if _, err := contents.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	logger.V(2).Info("Recorded nodeAffinity", "nodeAffinity", terms)
	return nil
}
