package snapshotter

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/controllers/topology"
)

// createTarget is what CreateSnapshot learned before calling the driver.
type createTarget struct {
	content     string
	requirement *csi.TopologyRequirement // nil: the class has no allowedTopologies
}

// prepare reads the content being created and its class and builds the
// requirement. Its errors are never final: this call makes no CSI request,
// but an earlier attempt's may still run in the driver or may have cut the
// snapshot with its reply lost (DEADLINE_EXCEEDED), and only a later
// CreateSnapshot with the same name learns its ID. So they are plain
// errors, which upstream's isCSIFinalError counts as "not known", keeping
// the being-created annotation (package doc).
func (s *Snapshotter) prepare(ctx context.Context, contentName, snapshotName, volumeHandle string) (*createTarget, error) {
	if contentName == "" {
		return nil, fmt.Errorf("snapshot %s: no VolumeSnapshotContent name in the create parameters; the sidecar controller must run with extra create metadata", snapshotName)
	}
	content, err := s.client.Resource(snapshotapi.VolumeSnapshotContents).Get(ctx, contentName, metav1.GetOptions{})
	if err != nil {
		return nil, notFinal(fmt.Sprintf("reading VolumeSnapshotContent %s", contentName), err)
	}
	if err := s.checkContent(content, volumeHandle); err != nil {
		return nil, notFinal("VolumeSnapshotContent "+contentName, err)
	}
	req, err := s.requirement(ctx, content, snapshotName)
	if err != nil {
		return nil, notFinal("VolumeSnapshotContent "+contentName, err)
	}
	return &createTarget{content: contentName, requirement: req}, nil
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

// requirement turns the content's class's allowedTopologies into
// accessibility requirements; a class without them gives nil.
func (s *Snapshotter) requirement(ctx context.Context, content *unstructured.Unstructured, snapshotName string) (*csi.TopologyRequirement, error) {
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
	req, err := topology.Requirement(terms, snapshotName)
	if err != nil {
		return nil, fmt.Errorf("VolumeSnapshotClass %s allowedTopologies: %w", className, err)
	}
	return req, nil
}
