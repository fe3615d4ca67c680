package snapshotter

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	csirpc "github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
)

// Capabilities is what the sidecar needs to know about the plugin.
type Capabilities struct {
	// CreateDelete: controller capability CREATE_DELETE_SNAPSHOT; without
	// it the sidecar has nothing to do and refuses to start, as upstream.
	CreateDelete bool
	// Accessibility: plugin capability SNAPSHOT_ACCESSIBILITY_CONSTRAINTS;
	// without it CSI forbids accessibility_requirements.
	Accessibility bool
	// Groups: plugin capability GROUP_CONTROLLER_SERVICE, without which
	// upstream's group snapshot support has nobody to call.
	Groups bool
	// GetSnapshot: controller capability GET_SNAPSHOT, how a group
	// member's accessible_topology is read (members.go).
	GetSnapshot bool
}

// Probe asks the plugin for both capabilities.
func Probe(ctx context.Context, conn *grpc.ClientConn) (Capabilities, error) {
	plugin, err := csirpc.GetPluginCapabilities(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("GetPluginCapabilities: %w", err)
	}
	controller, err := csirpc.GetControllerCapabilities(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("ControllerGetCapabilities: %w", err)
	}
	return Capabilities{
		CreateDelete:  controller[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT],
		Accessibility: plugin[csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS],
		Groups:        plugin[csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE],
		GetSnapshot:   controller[csi.ControllerServiceCapability_RPC_GET_SNAPSHOT],
	}, nil
}
