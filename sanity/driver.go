package sanity

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/gomega"
)

// driver answers what the plugin under test advertises.
type driver struct {
	sc *sanity.TestContext
}

func (d driver) pluginCapability(c csi.PluginCapability_Service_Type) bool {
	resp, err := csi.NewIdentityClient(d.sc.ControllerConn).GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
	Expect(err).NotTo(HaveOccurred(), "GetPluginCapabilities")
	for _, cap := range resp.GetCapabilities() {
		if cap.GetService().GetType() == c {
			return true
		}
	}
	return false
}

func (d driver) controllerCapability(c csi.ControllerServiceCapability_RPC_Type) bool {
	resp, err := csi.NewControllerClient(d.sc.ControllerConn).ControllerGetCapabilities(context.Background(), &csi.ControllerGetCapabilitiesRequest{})
	if err != nil {
		return false // no controller service
	}
	for _, cap := range resp.GetCapabilities() {
		if cap.GetRpc().GetType() == c {
			return true
		}
	}
	return false
}

func (d driver) nodeInfo() *csi.NodeGetInfoResponse {
	resp, err := csi.NewNodeClient(d.sc.Conn).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	Expect(err).NotTo(HaveOccurred(), "NodeGetInfo")
	return resp
}

// segments is the configured list, or the node's own segment.
func (d driver) segments() []*csi.Topology {
	if segs := config().Segments; len(segs) > 0 {
		return toCSI(segs...)
	}
	if t := d.nodeInfo().GetAccessibleTopology(); t != nil {
		return []*csi.Topology{t}
	}
	return nil
}

func (d driver) nodeCapability(c csi.NodeServiceCapability_RPC_Type) bool {
	resp, err := csi.NewNodeClient(d.sc.Conn).NodeGetCapabilities(context.Background(), &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return false
	}
	for _, cap := range resp.GetCapabilities() {
		if cap.GetRpc().GetType() == c {
			return true
		}
	}
	return false
}
