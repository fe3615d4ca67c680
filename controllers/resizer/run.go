package resizer

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
	"google.golang.org/grpc"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/internal/bootstrap"
)

// leaderLockPrefix is upstream csi-resizer's, on purpose: this resizer and
// a csi-resizer for the same driver never both lead, so swapping one
// image for the other is a safe rolling update.
const leaderLockPrefix = "external-resizer"

// Config is everything the command line sets.
type Config struct {
	Sidecar standardflags.SidecarConfiguration
	Options Options // DriverName: --driver-name, else the plugin's
}

// Run connects to the plugin and the API server and runs the resizer
// until ctx ends (or, with leader election, the lease is lost).
func Run(ctx context.Context, cfg Config) error {
	sidecar, err := bootstrap.NewCSISidecar(ctx, &cfg.Sidecar, cfg.Options.Timeout)
	if err != nil {
		return err
	}
	defer sidecar.Close()
	if cfg.Options.DriverName == "" {
		cfg.Options.DriverName = sidecar.DriverName
	}
	conn := sidecar.Conn
	caps, err := probePlugin(ctx, conn, sidecar.DriverName, cfg.Options.Timeout)
	if err != nil {
		return err
	}
	sidecar.ServeCSIMetrics(cfg.Options.DriverName)
	ctrl, err := NewController(sidecar.Clients.Kube, NewExpander(conn, caps), cfg.Options)
	if err != nil {
		return err
	}
	modify, err := modifyServed(caps, sidecar.Clients.Kube.Discovery())
	if err != nil {
		return err
	}
	if modify {
		if err := ctrl.EnableModify(NewModifier(conn)); err != nil {
			return err
		}
	}
	klog.FromContext(ctx).Info("Starting the resizer", "driver", cfg.Options.DriverName,
		"controllerExpansion", caps.Controller, "nodeOnlyExpansion", caps.Node, "modify", modify)
	sidecar.Lock = leaderLockPrefix + "-" + cfg.Options.DriverName
	return sidecar.Run(ctx, ctrl.Run)
}

// probePlugin reads the capabilities of the plugin named name and checks
// that it can expand volumes at all.
func probePlugin(ctx context.Context, conn *grpc.ClientConn, name string, timeout time.Duration) (Capabilities, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	caps, err := Probe(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("probing CSI driver %s: %w", name, err)
	}
	if !caps.Controller && !caps.Node {
		return Capabilities{}, fmt.Errorf("CSI driver %s has neither the controller capability EXPAND_VOLUME nor the plugin capability VolumeExpansion", name)
	}
	return caps, nil
}

// modifyServed says whether the modify loop runs: the plugin has
// MODIFY_VOLUME and the API server serves storage.k8s.io/v1
// VolumeAttributesClasses (GA in Kubernetes 1.34; on an older server its
// informer would never sync). Like csi-provisioner, which stops passing
// mutable_parameters without that API.
func modifyServed(caps Capabilities, d discovery.DiscoveryInterface) (bool, error) {
	if !caps.Modify {
		return false, nil
	}
	resources, err := d.ServerResourcesForGroupVersion(storagev1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering storage.k8s.io/v1: %w", err)
	}
	return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "volumeattributesclasses" }), nil
}
