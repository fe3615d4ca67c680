package provisioner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	ctrl "github.com/kubernetes-csi/external-provisioner/v6/pkg/controller"
	"github.com/kubernetes-csi/external-provisioner/v6/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"

	zpfeatures "github.com/zonepath/zonepath/controllers/features"
	"github.com/zonepath/zonepath/controllers/snapshotapi"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// Run provisions volumes for the driver at cfg.Sidecar.CSIAddress until
// ctx ends, wired as csi-provisioner v6.3.0 wires it (without node
// deployment, CSI migration and cross-namespace data sources; capacity
// tracking with --enable-capacity), with upstream's provisioner wrapped by New. The process
// plumbing (API client, HTTP, leader election) is package bootstrap's.
func Run(ctx context.Context, cfg Config) error {
	// Upstream reads ReferenceGrants for cross-namespace data sources; this
	// binary does not watch them, so refuse rather than fail every claim.
	if crossNamespace() {
		return fmt.Errorf("--feature-gates=%s=true is not supported by zonepath-provisioner", features.CrossNamespaceVolumeDataSource)
	}
	sidecar, err := bootstrap.NewSidecar(&cfg.Sidecar)
	if err != nil {
		return err
	}
	c := sidecar.Clients
	disableMissingVolumeAttributesClass(c.Kube)
	d, err := connectDriver(ctx, cfg.Sidecar.CSIAddress, cfg.Timeout)
	if err != nil {
		return err
	}
	defer d.conn.Close()
	klog.FromContext(ctx).Info("Detected CSI driver", "driver", d.name, "volumeSnapshotTopologyGate", zpfeatures.Enabled())

	k := newCaches(c.Kube, d)
	options := libOptions(cfg, k)
	if sidecar.ServesHTTP() {
		options = append(options, handleMetrics(sidecar.Mux, cfg.Sidecar.MetricsPath, d))
	}
	tracking, err := capacityOf(ctx, cfg, c.Config, d, k)
	if err != nil {
		return err
	}
	wrapper := New(tracking.wrap(newUpstream(cfg, c, d, k)), Options{
		Resolver: snapshotapi.Resolver{Reader: snapshotapi.Live{Client: c.Dynamic}, CrossNamespace: crossNamespace()},
		Claims:   c.Kube.CoreV1(),
		Nodes:    DriverNodes{Driver: d.name, CSINodes: k.csiNodes, Nodes: k.nodes},
	})
	if zpfeatures.Enabled() {
		if err := wrapper.Watch(k.claimInformer()); err != nil {
			return err
		}
	}
	pc := controller.NewProvisionController(ctx, c.Kube, d.name, wrapper, options...)
	helpers := newHelpers(ctx, cfg, c, d, k)
	sidecar.Lock = d.name
	return sidecar.Run(ctx, func(ctx context.Context) error {
		tracking.start(ctx, cfg.CapacityThreads)
		if err := k.start(ctx); err != nil {
			return err
		}
		helpers.start(ctx, cfg)
		pc.Run(ctx)
		return nil
	})
}

// crossNamespace is upstream's CrossNamespaceVolumeDataSource gate, which
// Run refuses: the wrapper's resolver then refuses every dataSourceRef
// into another namespace, as upstream does with the gate off.
func crossNamespace() bool {
	return utilfeature.DefaultFeatureGate.Enabled(features.CrossNamespaceVolumeDataSource)
}

// newUpstream is external-provisioner's provisioner, with the arguments
// csi-provisioner passes for a driver that is not migrated from in-tree
// and runs as a central controller.
func newUpstream(cfg Config, c *bootstrap.Clients, d *driver, k *caches) controller.Provisioner {
	identity := strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" + strconv.Itoa(rand.IntN(10000)) + "-" + d.name
	return ctrl.NewCSIProvisioner(c.Kube, cfg.Timeout, identity, cfg.VolumeNamePrefix, cfg.VolumeNameUUIDLength,
		d.conn, c.Snapshots, d.name, d.pluginCaps, d.ctrlCaps, "", cfg.StrictTopology, cfg.ImmediateTopology,
		csitrans.New(), k.classes, k.csiNodes, k.nodes, k.claims, k.vas, nil,
		cfg.ExtraCreateMetadata, cfg.DefaultFSType, nil, cfg.ControllerPublishReadOnly,
		cfg.PreventVolumeModeConversion, ctrl.NewInMemoryStore())
}

// libOptions configure the lib's controller as csi-provisioner does:
// leader election is done around the whole process, failures are retried
// forever with exponential backoff, and PVs get the deletion finalizer.
func libOptions(cfg Config, k *caches) []func(*controller.ProvisionController) error {
	return []func(*controller.ProvisionController) error{
		controller.LeaderElection(false),
		controller.FailedProvisionThreshold(0),
		controller.FailedDeleteThreshold(0),
		controller.RateLimiter(workqueue.NewTypedItemExponentialFailureRateLimiter[string](cfg.RetryIntervalStart, cfg.RetryIntervalMax)),
		controller.Threadiness(int(cfg.WorkerThreads)),
		controller.CreateProvisionedPVLimiter(workqueue.DefaultTypedControllerRateLimiter[string]()),
		controller.ClaimsInformer(k.claimInformer()),
		controller.RetryIntervalMax(cfg.RetryIntervalMax),
		controller.AddFinalizer(true),
	}
}

// disableMissingVolumeAttributesClass turns upstream's VolumeAttributesClass
// gate off when the API server lacks the v1 API and the gate was not set
// explicitly, as csi-provisioner does; otherwise every claim with a class
// would fail reading it.
func disableMissingVolumeAttributesClass(kube kubernetes.Interface) {
	gate := utilfeature.DefaultMutableFeatureGate
	if gate.ExplicitlySet(features.VolumeAttributesClass) || !gate.Enabled(features.VolumeAttributesClass) {
		return
	}
	if ok, err := features.IsVolumeAttributesClassV1Enabled(kube.Discovery()); err == nil && !ok {
		klog.InfoS("Disabling VolumeAttributesClass: the API server has no storage.k8s.io/v1 VolumeAttributesClass")
		if err := gate.Set(string(features.VolumeAttributesClass) + "=false"); err != nil {
			klog.ErrorS(err, "Disabling VolumeAttributesClass")
		}
	}
}
