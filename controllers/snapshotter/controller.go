package snapshotter

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	informers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	groupinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions/volumegroupsnapshot/v1"
	"github.com/kubernetes-csi/external-snapshotter/v8/pkg/group_snapshotter"
	sidecar "github.com/kubernetes-csi/external-snapshotter/v8/pkg/sidecar-controller"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/zonepath/zonepath/internal/bootstrap"
)

// Options are the csi-snapshotter settings of the controller.
type Options struct {
	DriverName             string
	Timeout                time.Duration // of each CSI call
	SnapshotNamePrefix     string
	SnapshotNameUUIDLength int // -1: the whole UID
	Workers                int
	RetryIntervalStart     time.Duration
	RetryIntervalMax       time.Duration
	ResyncPeriod           time.Duration
	// GroupSnapshots runs upstream's group snapshot support (set by Run
	// from upstream's gate CSIVolumeGroupSnapshot and the plugin's
	// GROUP_CONTROLLER_SERVICE), with these name settings.
	GroupSnapshots              bool
	GroupSnapshotNamePrefix     string
	GroupSnapshotNameUUIDLength int
}

// Validate reports settings upstream would accept and then misbehave on.
func (o Options) Validate() error {
	switch {
	case o.DriverName == "":
		return fmt.Errorf("driver name is empty")
	case o.SnapshotNamePrefix == "":
		return fmt.Errorf("--snapshot-name-prefix must not be empty")
	case o.GroupSnapshots && o.GroupSnapshotNamePrefix == "":
		return fmt.Errorf("--groupsnapshot-name-prefix must not be empty")
	case o.SnapshotNameUUIDLength == 0 || o.SnapshotNameUUIDLength < -1 || o.SnapshotNameUUIDLength > 32:
		// 32: a UID has 32 hex digits once its dashes are removed.
		return fmt.Errorf("--snapshot-name-uuid-length must be -1 or 1..32, not %d", o.SnapshotNameUUIDLength)
	case o.Workers < 1:
		return fmt.Errorf("--worker-threads must be at least 1, not %d", o.Workers)
	case o.Timeout <= 0 || o.RetryIntervalStart <= 0 || o.RetryIntervalMax < o.RetryIntervalStart:
		return fmt.Errorf("--timeout and --retry-interval-start must be positive and --retry-interval-max at least --retry-interval-start")
	}
	return nil
}

// Controller is upstream's sidecar controller driven by a Snapshotter,
// and, with KEP-5943 on, the removal of the pins it leaves on contents.
type Controller struct {
	factory informers.SharedInformerFactory
	run     func(workers int, stop <-chan struct{})
	workers int
	unpin   *unpinner // nil: KEP-5943 off, nothing pinned
	members *members  // nil: group snapshots or KEP-5943 off
	events  record.EventBroadcaster
}

// NewController wires upstream's sidecar controller to snap. Extra create
// metadata is always on, so that snap learns the content's name; snap
// hides it from the driver unless asked (controllers/README.md). Group
// snapshots run when o.GroupSnapshots says so, through upstream's
// GroupSnapshotter, and with KEP-5943 on their members' contents get
// nodeAffinity (members.go). It gives snap the event recorder for its
// Warning events on VolumeSnapshots and, when KEP-5943 applies (the gate
// and the plugin capability, at start), runs the unpinner on upstream's
// content informer.
func NewController(kube kubernetes.Interface, snapClient clientset.Interface, snap *Snapshotter, o Options) (*Controller, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(snapClient, o.ResyncPeriod)
	c := &Controller{factory: factory, workers: o.Workers, events: record.NewBroadcaster()}
	c.events.StartRecordingToSink(&corev1.EventSinkImpl{Interface: kube.CoreV1().Events(metav1.NamespaceAll)})
	snap.recorder = c.events.NewRecorder(scheme.Scheme, v1.EventSource{Component: "zonepath-snapshotter"})
	contents := factory.Snapshot().V1().VolumeSnapshotContents()
	var err error
	if snap.topologyOn() {
		if c.unpin, err = newUnpinner(snap.client, contents.Informer(), contents.Lister(), o, snap.finals.forget); err != nil {
			return nil, err
		}
	}
	// Group members: their nodeAffinity (with KEP-5943 on) and the
	// readiness upstream's controllers lose (members.go), gate or not.
	if o.GroupSnapshots {
		if c.members, err = newMembers(snap, contents.Informer(), contents.Lister(), o); err != nil {
			return nil, err
		}
	}
	var groups group_snapshotter.GroupSnapshotter
	var groupContents groupinformers.VolumeGroupSnapshotContentInformer
	var groupClasses groupinformers.VolumeGroupSnapshotClassInformer
	if o.GroupSnapshots {
		groups = group_snapshotter.NewGroupSnapshotter(snap.conn)
		groupContents = factory.Groupsnapshot().V1().VolumeGroupSnapshotContents()
		groupClasses = factory.Groupsnapshot().V1().VolumeGroupSnapshotClasses()
	}
	ctrl := sidecar.NewCSISnapshotSideCarController(
		snapClient, kube, o.DriverName,
		factory.Snapshot().V1().VolumeSnapshotContents(),
		factory.Snapshot().V1().VolumeSnapshotClasses(),
		snap, groups,
		o.Timeout, o.ResyncPeriod,
		o.SnapshotNamePrefix, o.SnapshotNameUUIDLength,
		o.GroupSnapshotNamePrefix, o.GroupSnapshotNameUUIDLength,
		true, // extra create metadata: see above
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](o.RetryIntervalStart, o.RetryIntervalMax),
		o.GroupSnapshots, groupContents, groupClasses,
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](o.RetryIntervalStart, o.RetryIntervalMax),
	)
	c.run = func(workers int, stop <-chan struct{}) {
		// Upstream adds its workers to wg when its gate
		// ReleaseLeaderElectionOnExit is on, and needs a non-nil one.
		var wg sync.WaitGroup
		ctrl.Run(workers, stop, &wg)
		wg.Wait()
	}
	return c, nil
}

// Run starts the informers, waits (bounded) for their caches, then runs
// the workers until ctx ends and they have stopped.
func (c *Controller) Run(ctx context.Context) error {
	defer c.events.Shutdown()
	defer c.factory.Shutdown()
	if err := bootstrap.StartInformers(ctx, c.factory); err != nil {
		return err
	}
	var wg sync.WaitGroup
	if c.unpin != nil {
		wg.Go(func() { c.unpin.run(ctx) })
	}
	if c.members != nil {
		wg.Go(func() { c.members.run(ctx) })
	}
	c.run(c.workers, ctx.Done())
	wg.Wait()
	return nil
}
