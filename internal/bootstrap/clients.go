package bootstrap

import (
	"fmt"

	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Clients are the API clients of a CSI sidecar.
type Clients struct {
	Config    *rest.Config
	Kube      kubernetes.Interface // core and storage objects, as protobuf
	Snapshots snapclientset.Interface
	Dynamic   dynamic.Interface
}

// NewClients builds them from cfg. Core objects go as protobuf, as the
// upstream sidecars send them; CRDs only speak JSON.
func NewClients(cfg *rest.Config) (*Clients, error) {
	core := rest.CopyConfig(cfg)
	core.ContentType = runtime.ContentTypeProtobuf
	kube, err := kubernetes.NewForConfig(core)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	snaps, err := snapclientset.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("snapshot client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	return &Clients{Config: cfg, Kube: kube, Snapshots: snaps, Dynamic: dyn}, nil
}
