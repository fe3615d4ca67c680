package resizer

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/accessmodes"
	csirpc "github.com/kubernetes-csi/csi-lib-utils/rpc"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
)

// Capabilities is what the resizer needs to know about the plugin.
type Capabilities struct {
	// Controller: controller capability EXPAND_VOLUME, so
	// ControllerExpandVolume is called.
	Controller bool
	// Node: plugin capability VolumeExpansion (ONLINE or OFFLINE) without
	// Controller: the volume grows on the node only, which kubelet does
	// after the resizer has recorded the new size (upstream's "trivial
	// resizer").
	Node bool
	// SingleNodeMultiWriter: controller capability
	// SINGLE_NODE_MULTI_WRITER, which changes how ReadWriteOnce maps to a
	// CSI access mode.
	SingleNodeMultiWriter bool
	// Modify: controller capability MODIFY_VOLUME, so the modify loop
	// runs (modify.go).
	Modify bool
}

// Probe asks the plugin for its expansion capabilities. csirpc's plugin
// capability set holds services only, so the VolumeExpansion capability
// is read from the response itself.
func Probe(ctx context.Context, conn *grpc.ClientConn) (Capabilities, error) {
	plugin, err := csi.NewIdentityClient(conn).GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return Capabilities{}, fmt.Errorf("GetPluginCapabilities: %w", err)
	}
	controller, err := csirpc.GetControllerCapabilities(ctx, conn)
	if err != nil {
		return Capabilities{}, fmt.Errorf("ControllerGetCapabilities: %w", err)
	}
	c := Capabilities{
		Controller:            controller[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME],
		SingleNodeMultiWriter: controller[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER],
		Modify:                controller[csi.ControllerServiceCapability_RPC_MODIFY_VOLUME],
	}
	for _, pc := range plugin.GetCapabilities() {
		if pc.GetVolumeExpansion() != nil && pc.GetVolumeExpansion().GetType() != csi.PluginCapability_VolumeExpansion_UNKNOWN {
			c.Node = !c.Controller
		}
	}
	return c, nil
}

// Expander grows a volume on the storage side.
type Expander interface {
	// Expand grows volume pv to at least size bytes and returns its new
	// capacity and whether the node must still expand it.
	Expand(ctx context.Context, pv *v1.PersistentVolume, size int64) (capacity int64, nodeRequired bool, err error)
}

// csiExpander calls ControllerExpandVolume, or, for a plugin that expands
// on nodes only, nothing.
type csiExpander struct {
	conn *grpc.ClientConn
	caps Capabilities
}

// NewExpander is the Expander of a plugin with caps on conn.
func NewExpander(conn *grpc.ClientConn, caps Capabilities) Expander {
	return &csiExpander{conn: conn, caps: caps}
}

func (e *csiExpander) Expand(ctx context.Context, pv *v1.PersistentVolume, size int64) (int64, bool, error) {
	if !e.caps.Controller {
		// CSI 1.13, "ControllerExpandVolume": a plugin without
		// EXPAND_VOLUME but with VolumeExpansion is expanded by
		// NodeExpandVolume alone.
		return size, true, nil
	}
	capability, err := volumeCapability(pv, e.caps.SingleNodeMultiWriter)
	if err != nil {
		return 0, false, err
	}
	rsp, err := csi.NewControllerClient(e.conn).ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId:         pv.Spec.CSI.VolumeHandle,
		CapacityRange:    &csi.CapacityRange{RequiredBytes: size},
		VolumeCapability: capability,
	})
	if err != nil {
		return 0, false, err
	}
	return rsp.GetCapacityBytes(), rsp.GetNodeExpansionRequired(), nil
}

// volumeCapability is the capability the volume is published with, which
// CSI lets ControllerExpandVolume carry ("volume_capability ... OPTIONAL")
// so that the plugin knows whether a file system is on it.
func volumeCapability(pv *v1.PersistentVolume, singleNodeMultiWriter bool) (*csi.VolumeCapability, error) {
	mode, err := accessmodes.ToCSIAccessMode(pv.Spec.AccessModes, singleNodeMultiWriter)
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", pv.Name, err)
	}
	c := &csi.VolumeCapability{AccessMode: &csi.VolumeCapability_AccessMode{Mode: mode}}
	if pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == v1.PersistentVolumeBlock {
		c.AccessType = &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}}
		return c, nil
	}
	c.AccessType = &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{
		FsType: pv.Spec.CSI.FSType, MountFlags: pv.Spec.MountOptions,
	}}
	return c, nil
}
