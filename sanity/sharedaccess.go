package sanity

import (
	"context"
	"fmt"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var (
	ruleMultiNode       = Label("shared-access", "rule:multi-node")
	ruleSingleNode      = Label("shared-access", "rule:single-node")
	rulePublishTopology = Label("shared-access", "rule:publish-topology")
)

const publishReadonly = csi.ControllerServiceCapability_RPC_PUBLISH_READONLY

// multiNodeModes are csi.proto's MULTI_NODE_* access modes. For each, the
// readonly flags of a first and a second publish the mode admits
// (csi.proto AccessMode): any number of writers, only readers, or one
// writer and readers.
var multiNodeModes = []struct {
	mode                 csi.VolumeCapability_AccessMode_Mode
	firstRO, secondRO    bool
	needsPublishReadonly bool
}{
	{mode: csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER},
	{mode: csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY, firstRO: true, secondRO: true},
	{mode: csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER, secondRO: true, needsPublishReadonly: true},
}

// modeVolume creates a volume whose capability has mode, in the node's
// segment when the driver takes volume topology. A refusal is returned:
// the driver may not support the mode (CreateVolume: "If ANY of the
// specified volume capabilities are not supported by the SP, the call
// MUST return the appropriate gRPC error code").
func (s *suite) modeVolume(name string, mode csi.VolumeCapability_AccessMode_Mode, home *csi.Topology) (*csi.Volume, error) {
	req := sanity.MakeCreateVolumeReq(s.sc, sanity.UniqueString(name))
	req.VolumeCapabilities = []*csi.VolumeCapability{sanity.TestVolumeCapabilityWithAccessType(s.sc, mode)}
	if home != nil && s.d.pluginCapability(volumeTopologyCap) {
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{home}, Preferred: []*csi.Topology{home}}
	}
	resp, err := s.r.CreateVolume(context.Background(), req)
	return resp.GetVolume(), err
}

// publisher publishes volumes through the controller client itself, not
// sanity.Resources, whose cleanup would delete a volume still published
// to another node; undo unpublishes all it published, last first.
type publisher struct {
	s    *suite
	undo []func()
}

func (p *publisher) publish(vol *csi.Volume, node string, mode csi.VolumeCapability_AccessMode_Mode, readonly bool) error {
	req := sanity.MakeControllerPublishVolumeReq(p.s.sc, vol.GetVolumeId(), node)
	req.VolumeCapability = sanity.TestVolumeCapabilityWithAccessType(p.s.sc, mode)
	req.Readonly = readonly
	req.VolumeContext = vol.GetVolumeContext()
	_, err := p.s.r.ControllerClient.ControllerPublishVolume(context.Background(), req)
	if err == nil {
		p.undo = append(p.undo, func() {
			_, err := p.s.r.ControllerClient.ControllerUnpublishVolume(context.Background(), sanity.MakeControllerUnpublishVolumeReq(p.s.sc, vol.GetVolumeId(), node))
			Expect(err).NotTo(HaveOccurred(), "ControllerUnpublishVolume of %s from %s", vol.GetVolumeId(), node)
		})
	}
	return err
}

func (p *publisher) unpublishAll() {
	for i := len(p.undo) - 1; i >= 0; i-- {
		p.undo[i]()
	}
	p.undo = nil
}

// otherNodes are the configured nodes besides home whose segment the
// volume is accessible from (inside, true) or not (inside, false). A
// volume without accessible_topology is accessible from every node
// ("If this field is not specified, the CO MAY assume the volume is
// equally accessible from all nodes in the cluster", csi.proto
// Volume.accessible_topology), so none is outside it.
func otherNodes(vol *csi.Volume, home string, inside bool) []Node {
	var out []Node
	topo := vol.GetAccessibleTopology()
	for _, n := range config().Nodes {
		if n.ID == home {
			continue
		}
		in := len(topo) == 0 || len(n.Segment) > 0 && usableFrom(topo, &csi.Topology{Segments: n.Segment})
		if in == inside {
			out = append(out, n)
		}
	}
	return out
}

// needNode returns the first of nodes, or skips saying what is missing.
func needNode(nodes []Node, vol *csi.Volume, where string) Node {
	if len(nodes) == 0 {
		Skip(fmt.Sprintf("no configured node (nodes in --zonepath.config) lies %s the volume's accessible_topology %s", where, accessibleText(vol.GetAccessibleTopology())))
	}
	return nodes[0]
}

// What binds a driver here:
//   - A volume created with a MULTI_NODE_* mode must allow it: CreateVolume,
//     "SP MUST provision a volume that will satisfy ALL of the
//     capabilities specified"; MULTI_NODE_MULTI_WRITER "Can be published as
//     read/write at multiple nodes simultaneously", MULTI_NODE_READER_ONLY
//     "as readonly at multiple nodes", MULTI_NODE_SINGLE_WRITER "at
//     multiple nodes ... Only one of the node can be used as read/write".
//     So two nodes the volume is accessible from both take it (the
//     readonly flag, for a second reader, only with PUBLISH_READONLY:
//     "CO MUST set this field to false if SP does not have the
//     PUBLISH_READONLY controller capability"). A mode the driver refuses
//     at CreateVolume is one it does not support, and is not tested. Whether
//     a second writer of MULTI_NODE_SINGLE_WRITER is refused or published
//     read-only is not observable here, so it is not asked.
//   - A volume of SINGLE_NODE_WRITER published to one node, published to
//     another: spec.md ControllerPublishVolume Errors, "Volume published to
//     another node", FAILED_PRECONDITION ("the plugin MUST return the
//     specified gRPC error code"); the message SHOULD name the node.
//   - A node outside the volume's accessible_topology ("where ... the
//     provisioned volume is accessible from") cannot use it, so a publish
//     there fails, whatever the mode: ControllerPublishVolumeRequest.
//     volume_capability, "SP MUST ensure the CO can use the published
//     volume as described. Otherwise SP MUST return the appropriate gRPC
//     error code". The spec names no code for it: any error passes.
var _ = describe("Shared access [zonepath]", []func(*suite){(*suite).needPublish}, func(s *suite) {
	It("publishes a volume of each MULTI_NODE_* access mode it creates to two nodes of its accessible_topology at once (csi.proto VolumeCapability.AccessMode; spec.md CreateVolume: the volume MUST satisfy its capabilities)", ruleMultiNode, func() {
		home := s.d.nodeInfo()
		readonlyOK := s.d.controllerCapability(publishReadonly)
		tested := 0
		for _, m := range multiNodeModes {
			if m.needsPublishReadonly && !readonlyOK {
				By(fmt.Sprintf("%s: not tested: a second node is published read-only only with PUBLISH_READONLY", m.mode))
				continue
			}
			vol, err := s.modeVolume("zp-"+strings.ToLower(m.mode.String()), m.mode, home.GetAccessibleTopology())
			if err != nil {
				By(fmt.Sprintf("%s: not tested: CreateVolume refuses it (%v), so the driver does not support it", m.mode, err))
				continue
			}
			peer := needNode(otherNodes(vol, home.GetNodeId(), true), vol, "inside")
			p := &publisher{s: s}
			func() {
				defer p.unpublishAll()
				err := p.publish(vol, home.GetNodeId(), m.mode, m.firstRO && readonlyOK)
				Expect(err).NotTo(HaveOccurred(), "%s: ControllerPublishVolume to node %s", m.mode, home.GetNodeId())
				err = p.publish(vol, peer.ID, m.mode, m.secondRO && readonlyOK)
				if code(err) == codes.ResourceExhausted {
					Skip(fmt.Sprintf("node %s has no room for another volume (%v)", peer.ID, err))
				}
				Expect(err).NotTo(HaveOccurred(), "%s: ControllerPublishVolume to a second node, %s (segment %s), of the volume's accessible_topology %s while it is published to %s: the mode admits several nodes",
					m.mode, peer.ID, formatSegment(peer.Segment), accessibleText(vol.GetAccessibleTopology()), home.GetNodeId())
			}()
			tested++
		}
		if tested == 0 {
			Skip("the driver creates no volume of a MULTI_NODE_* access mode it can be tested with")
		}
	})

	It("refuses a second node for a volume of SINGLE_NODE_WRITER with FAILED_PRECONDITION (spec.md ControllerPublishVolume Errors: Volume published to another node)", ruleSingleNode, func() {
		home := s.d.nodeInfo()
		mode := csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
		vol, err := s.modeVolume("zp-single-node", mode, home.GetAccessibleTopology())
		Expect(err).NotTo(HaveOccurred(), "CreateVolume")
		peer := needNode(otherNodes(vol, home.GetNodeId(), true), vol, "inside")
		p := &publisher{s: s}
		defer p.unpublishAll()
		Expect(p.publish(vol, home.GetNodeId(), mode, false)).To(Succeed(), "ControllerPublishVolume to node %s", home.GetNodeId())
		err = p.publish(vol, peer.ID, mode, false)
		Expect(code(err)).To(Equal(codes.FailedPrecondition), "ControllerPublishVolume of a SINGLE_NODE_WRITER volume published to %s, to node %s: %v (spec.md: FAILED_PRECONDITION, \"the plugin MUST return the specified gRPC error code\")",
			home.GetNodeId(), peer.ID, err)
		if !strings.Contains(status.Convert(err).Message(), home.GetNodeId()) {
			warn(shouldNotMet, "node of the publication not named", fmt.Sprintf("the refusal %q does not name node %s, where the volume is published (\"the Plugin SHOULD specify the node_id of the node at which the volume is published as part of the gRPC status.message\")",
				status.Convert(err).Message(), home.GetNodeId()))
		}
	})

	It("refuses a publish to a node outside the volume's accessible_topology, whatever the access mode (csi.proto Volume.accessible_topology; ControllerPublishVolumeRequest.volume_capability: SP MUST ensure the CO can use the published volume)", rulePublishTopology, func() {
		s.needVolumeTopology()
		home := s.d.nodeInfo()
		modes := []csi.VolumeCapability_AccessMode_Mode{csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}
		for _, m := range multiNodeModes {
			modes = append(modes, m.mode)
		}
		for _, mode := range modes {
			vol, err := s.modeVolume("zp-outside-"+strings.ToLower(mode.String()), mode, home.GetAccessibleTopology())
			if err != nil {
				By(fmt.Sprintf("%s: not tested: CreateVolume refuses it (%v)", mode, err))
				continue
			}
			outsider := needNode(otherNodes(vol, home.GetNodeId(), false), vol, "outside")
			p := &publisher{s: s}
			err = p.publish(vol, outsider.ID, mode, false)
			p.unpublishAll()
			Expect(err).To(HaveOccurred(), "%s: ControllerPublishVolume to node %s (segment %s) succeeded, but the volume is accessible only from %s: either the node cannot use it, or accessible_topology does not say where it is accessible from",
				mode, outsider.ID, formatSegment(outsider.Segment), accessibleText(vol.GetAccessibleTopology()))
		}
	})
})
