package snapshotter

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	upstream "github.com/kubernetes-csi/external-snapshotter/v8/pkg/snapshotter"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/utils"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/controllers/features"
)

// metadataKeys are the parameters upstream adds with extra create
// metadata; NewController always asks for them (controllers/README.md,
// "Finding the VolumeSnapshotContent").
var metadataKeys = []string{
	utils.PrefixedVolumeSnapshotNameKey,
	utils.PrefixedVolumeSnapshotNamespaceKey,
	utils.PrefixedVolumeSnapshotContentNameKey,
}

// Snapshotter implements upstream's pkg/snapshotter.Snapshotter. Delete
// and status calls go to upstream's implementation; CreateSnapshot is
// ours, for KEP-5943.
type Snapshotter struct {
	upstream.Snapshotter
	controller csi.ControllerClient
	conn       *grpc.ClientConn // for upstream's GroupSnapshotter
	driver     string
	client     dynamic.Interface
	// accessibility: the plugin has SNAPSHOT_ACCESSIBILITY_CONSTRAINTS.
	accessibility bool
	// getSnapshot: the plugin has GET_SNAPSHOT (members.go's lookUp).
	getSnapshot bool
	// keepMetadata: --extra-create-metadata, pass the keys to the driver.
	keepMetadata bool
	// recorder emits Warning events on VolumeSnapshots; NewController
	// sets it, and without it (a Snapshotter used alone) none is sent.
	recorder record.EventRecorder
	finals   finals
}

var _ upstream.Snapshotter = &Snapshotter{}

// SnapshotterOptions configure a Snapshotter.
type SnapshotterOptions struct {
	Conn       *grpc.ClientConn
	DriverName string
	// Client reads contents and classes and patches nodeAffinity.
	Client dynamic.Interface
	// Accessibility and GetSnapshot are the results of Probe.
	Accessibility bool
	GetSnapshot   bool
	// ExtraCreateMetadata is the user's --extra-create-metadata.
	ExtraCreateMetadata bool
}

// NewSnapshotter returns a Snapshotter calling the plugin on o.Conn.
func NewSnapshotter(o SnapshotterOptions) *Snapshotter {
	return &Snapshotter{
		Snapshotter:   upstream.NewSnapshotter(o.Conn),
		controller:    csi.NewControllerClient(o.Conn),
		conn:          o.Conn,
		driver:        o.DriverName,
		client:        o.Client,
		accessibility: o.Accessibility,
		getSnapshot:   o.GetSnapshot,
		keepMetadata:  o.ExtraCreateMetadata,
	}
}

// topologyOn says whether KEP-5943 applies to this call. The gate is read
// per call; it is fixed after flag parsing, and tests switch it.
func (s *Snapshotter) topologyOn() bool {
	return s.accessibility && features.Enabled()
}

// CreateSnapshot cuts snapshot name of volumeHandle. With topology on it
// sends the class's allowedTopologies as requirements and records the
// answer in the content's nodeAffinity before returning
// (controllers/README.md, "zonepath-snapshotter").
func (s *Snapshotter) CreateSnapshot(ctx context.Context, name, volumeHandle string, parameters, secrets map[string]string) (string, string, time.Time, int64, bool, error) {
	logger := klog.FromContext(ctx).WithValues("snapshot", name)
	req := &csi.CreateSnapshotRequest{
		Name:           name,
		SourceVolumeId: volumeHandle,
		Parameters:     s.driverParameters(parameters),
		Secrets:        secrets,
	}
	var target *createTarget
	if s.topologyOn() {
		var err error
		target, err = s.prepare(ctx, parameters[utils.PrefixedVolumeSnapshotContentNameKey], name, volumeHandle)
		if err != nil {
			return "", "", time.Time{}, 0, false, err
		}
		req.AccessibilityRequirements = target.requirement
	}
	rsp, err := s.controller.CreateSnapshot(ctx, req)
	if target != nil {
		s.settle(target, err)
	}
	if err != nil {
		s.refused(target, err)
		// As is: upstream reads the gRPC code, status.error keeps the text.
		return "", "", time.Time{}, 0, false, err
	}
	snap := rsp.GetSnapshot()
	if snap.GetSnapshotId() == "" {
		return "", "", time.Time{}, 0, false, fmt.Errorf("driver %s answered CreateSnapshot %s without a snapshot_id", s.driver, name)
	}
	if target != nil {
		if err := s.record(ctx, target, snap.GetAccessibleTopology()); err != nil {
			return "", "", time.Time{}, 0, false, err
		}
	}
	logger.V(4).Info("Snapshot created", "snapshotID", snap.GetSnapshotId(), "readyToUse", snap.GetReadyToUse())
	return s.driver, snap.GetSnapshotId(), creationTime(snap), snap.GetSizeBytes(), snap.GetReadyToUse(), nil
}

// settle records how the attempt with target's pin ended: a final error
// lets the next attempt build its requirement afresh (pin.go), and so
// does RESOURCE_EXHAUSTED when this process wrote the pin and saw every
// attempt under it answered. The driver then says that no snapshot of
// this name exists (one usable from the requirement would be OK, another
// ALREADY_EXISTS: spec.md CreateSnapshot), and no earlier attempt of
// unknown outcome can still make one; without that an admin could not
// send a snapshot waiting for quota, or refused as RESOURCE_EXHAUSTED for
// a misspelt zone by a driver that reads the spec that way, elsewhere by
// correcting the class. Upstream still retries it with backoff, as it
// does every RESOURCE_EXHAUSTED.
func (s *Snapshotter) settle(target *createTarget, err error) {
	switch {
	case err == nil:
		s.finals.forget(target.content)
	case isFinal(err), status.Code(err) == codes.ResourceExhausted && s.finals.certain(target.content, target.pin):
		s.finals.record(target.content, target.pin)
	default:
		s.finals.unknown(target.content)
	}
}

// refused tells the user, on the VolumeSnapshot they look at, that the
// driver refused CreateSnapshot as INVALID_ARGUMENT, a final error: a
// misspelt zone in the class's allowedTopologies, say. Upstream records
// it on the content (a SnapshotCreationFailed event) and copies it into
// the VolumeSnapshot's status.error, but emits no event there. Being
// final, upstream lets the VolumeSnapshot be deleted, and the next attempt
// builds its requirement from the class again (unpin.go).
func (s *Snapshotter) refused(target *createTarget, err error) {
	if s.recorder == nil || target == nil || target.snapshot.Name == "" || status.Code(err) != codes.InvalidArgument {
		return
	}
	s.recorder.Eventf(&target.snapshot, v1.EventTypeWarning, "SnapshotCreationRefused",
		"CSI driver %s refused CreateSnapshot for VolumeSnapshotContent %s as invalid: %s. Nothing was created: correct the VolumeSnapshotClass (its allowedTopologies are the zones asked for) and the next attempt uses it, or delete this VolumeSnapshot",
		s.driver, target.content, status.Convert(err).Message())
}

// creationTime is zero when the driver sent none, so that upstream
// substitutes the current time instead of storing 1970.
func creationTime(snap *csi.Snapshot) time.Time {
	if snap.GetCreationTime() == nil {
		return time.Time{}
	}
	return snap.GetCreationTime().AsTime()
}

// driverParameters drops the metadata keys the user did not ask for.
func (s *Snapshotter) driverParameters(parameters map[string]string) map[string]string {
	out := maps.Clone(parameters)
	if !s.keepMetadata {
		for _, k := range metadataKeys {
			delete(out, k)
		}
	}
	return out
}
