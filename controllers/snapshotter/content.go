package snapshotter

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

// createTarget is what CreateSnapshot learned before calling the driver.
type createTarget struct {
	content     string
	snapshot    v1.ObjectReference       // the VolumeSnapshot, for events
	requirement *csi.TopologyRequirement // nil: the class has no allowedTopologies
	pin         string                   // the pin the requirement was built from
}

// prepare reads the content being created and builds the requirement of
// this attempt: from the content's pin when an earlier attempt left one,
// else from the class's allowedTopologies, pinned on the content before
// any CSI call (snapshotapi.PinAnnotation). Its errors are never final:
// this call makes no CSI request, but an earlier attempt's may still run in
// the driver or may have cut the snapshot with its reply lost
// (DEADLINE_EXCEEDED), and only a later CreateSnapshot with the same name
// and requirement learns its ID. So they are plain errors, which
// upstream's isCSIFinalError counts as "not known", keeping the
// being-created annotation (controllers/README.md, "Errors").
func (s *Snapshotter) prepare(ctx context.Context, contentName, snapshotName, volumeHandle string) (*createTarget, error) {
	if contentName == "" {
		return nil, fmt.Errorf("snapshot %s: no VolumeSnapshotContent name in the create parameters; the sidecar controller must run with extra create metadata", snapshotName)
	}
	target := &createTarget{content: contentName}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		content, err := s.client.Resource(snapshotapi.VolumeSnapshotContents).Get(ctx, contentName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading VolumeSnapshotContent %s: %w", contentName, err)
		}
		if err := s.checkContent(content, volumeHandle); err != nil {
			return err
		}
		target.snapshot = snapshotOf(content)
		target.requirement, target.pin, err = s.pinnedRequirement(ctx, content, snapshotName)
		return err
	})
	if err != nil {
		return nil, notFinal("VolumeSnapshotContent "+contentName, err)
	}
	return target, nil
}

// snapshotOf is a reference to the VolumeSnapshot a content is bound to.
func snapshotOf(content *unstructured.Unstructured) v1.ObjectReference {
	ref := v1.ObjectReference{Kind: "VolumeSnapshot", APIVersion: snapshotapi.Group + "/v1"}
	ref.Namespace, _, _ = unstructured.NestedString(content.Object, "spec", "volumeSnapshotRef", "namespace")
	ref.Name, _, _ = unstructured.NestedString(content.Object, "spec", "volumeSnapshotRef", "name")
	uid, _, _ := unstructured.NestedString(content.Object, "spec", "volumeSnapshotRef", "uid")
	ref.UID = types.UID(uid)
	return ref
}

// notFinal formats err after what without wrapping it: a gRPC status
// somewhere in err's chain (a client's context error, say) would reach
// upstream through status.FromError and could count as final.
func notFinal(what string, err error) error {
	return fmt.Errorf("%s: %v", what, err)
}

// checkContent guards against writing one snapshot's topology to another
// content: the content must be this driver's and name this volume.
func (s *Snapshotter) checkContent(content *unstructured.Unstructured, volumeHandle string) error {
	driver, _, _ := unstructured.NestedString(content.Object, "spec", "driver")
	handle, _, _ := unstructured.NestedString(content.Object, "spec", "source", "volumeHandle")
	if driver != s.driver || handle != volumeHandle {
		return fmt.Errorf("is for driver %q volume %q, not driver %q volume %q", driver, handle, s.driver, volumeHandle)
	}
	return nil
}

// classTopology returns the allowedTopologies of the content's class; a
// content without a class has none.
func (s *Snapshotter) classTopology(ctx context.Context, content *unstructured.Unstructured) ([]v1.TopologySelectorTerm, error) {
	className, _, _ := unstructured.NestedString(content.Object, "spec", "volumeSnapshotClassName")
	if className == "" {
		return nil, nil
	}
	class, err := s.client.Resource(snapshotapi.VolumeSnapshotClasses).Get(ctx, className, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading VolumeSnapshotClass %s: %w", className, err)
	}
	terms, err := snapshotapi.AllowedTopologies(class)
	if err != nil {
		return nil, err
	}
	if err := topology.Validate(terms); err != nil {
		return nil, fmt.Errorf("VolumeSnapshotClass %s allowedTopologies: %w", className, err)
	}
	return terms, nil
}
