package plugin

import (
	"context"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
	"github.com/zonepath/zonepath/driver/world"
)

// ControllerPublishVolume implements csi.ControllerServer. It enforces the
// node's attach limit (spec: ControllerPublishVolume Errors, "Max volumes
// attached" is RESOURCE_EXHAUSTED), the volume's topology: a volume is
// only published to a node in one of its zones, whatever its access mode,
// and the access modes of its publications across nodes (access.go): a
// reader-only mode publishes read-only, the publish_context telling the
// node. On tmpfs, a read-write publish of a volume a group snapshot is
// cutting waits for no one: it is ABORTED (see groupcut.go).
func (p *Plugin) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	volID, nodeID := req.GetVolumeId(), req.GetNodeId()
	if err := checkID("volume_id", volID); err != nil {
		return nil, err
	}
	if nodeID == "" {
		return nil, status.Error(codes.InvalidArgument, "node_id is required")
	}
	if err := checkText("node_id", nodeID); err != nil {
		return nil, err
	}
	if err := checkMap("volume_context", req.GetVolumeContext()); err != nil {
		return nil, err
	}
	block, err := accessType([]*csi.VolumeCapability{req.GetVolumeCapability()})
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "volume_capability: %v", status.Convert(err).Message())
	}
	if err := checkMountFlags([]*csi.VolumeCapability{req.GetVolumeCapability()}); err != nil {
		return nil, err
	}
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()
	readonly := effectiveReadonly(mode, req.GetReadonly())
	release, err := p.admitPublish(volID, readonly)
	if err != nil {
		return nil, err
	}
	defer release()
	err = p.store.Update(func(tx *state.Tx) error {
		v := tx.Volume(volID)
		if v == nil {
			return status.Errorf(codes.NotFound, "volume %s does not exist", volID)
		}
		node, ok := p.nodes.lookup(nodeID)
		if !ok {
			return status.Errorf(codes.NotFound, "node %s is not known to this driver", nodeID)
		}
		if v.Block != block {
			return status.Errorf(codes.InvalidArgument, "volume_capability: access type differs from volume %s's", volID)
		}
		if err := p.publishable(v, node); err != nil {
			return err
		}
		if pub := tx.Publication(volID, nodeID); pub != nil {
			if pub.Readonly != readonly {
				return status.Errorf(codes.AlreadyExists, "volume %s is already published to node %s with readonly=%t", volID, nodeID, pub.Readonly)
			}
			return nil
		}
		if err := checkSharing(volID, tx.PublicationsOf(volID), nodeID, mode, readonly); err != nil {
			return err
		}
		if err := p.checkAttachLimit(tx, node); err != nil {
			return err
		}
		tx.PutPublication(&state.Publication{VolumeID: volID, NodeID: nodeID, Readonly: readonly, Mode: mode.String()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: publishContext(readonly)}, nil
}

// publishReadonlyKey marks in the publish_context a volume published to
// the node read-only. csi.proto ControllerPublishVolumeRequest.readonly:
// "Indicates SP MUST publish the volume in readonly mode"; the node
// service, which places the volume, learns it only here: the CO passes
// the publish_context to NodeStageVolume and NodePublishVolume, while its
// own NodePublishVolumeRequest.readonly may say otherwise (kubelet sets
// that from the pod's claim, the external-attacher this one from the
// PV's spec.csi.readOnly).
const publishReadonlyKey = "zonepath.csi.dev/readonly"

func publishContext(readonly bool) map[string]string {
	if readonly {
		return map[string]string{publishReadonlyKey: "true"}
	}
	return map[string]string{}
}

// publishedReadonly reads publishReadonlyKey: "true", or absent; anything
// else is no publish_context this driver gave.
func publishedReadonly(pc map[string]string) (bool, error) {
	switch v, ok := pc[publishReadonlyKey]; {
	case !ok:
		return false, nil
	case v == "true":
		return true, nil
	}
	return false, status.Errorf(codes.InvalidArgument, "publish_context: %s is %q; ControllerPublishVolume gives only \"true\"", publishReadonlyKey, truncate(pc[publishReadonlyKey]))
}

// checkAttachLimit refuses a publish that would take node past its limit
// (its publishLimit, when it has one above max_volumes_per_node),
// counting the volumes every node has attached from the start
// (preattachedVolumesPerNode, as a root disk) beside the published ones.
func (p *Plugin) checkAttachLimit(tx *state.Tx, node world.NodeInfo) error {
	limit := node.ControllerLimit()
	if limit <= 0 {
		return nil
	}
	published, preattached := int64(tx.PublishedVolumes(node.ID)), p.topo.PreattachedVolumesPerNode()
	if published+preattached < limit {
		return nil
	}
	if preattached == 0 {
		return status.Errorf(codes.ResourceExhausted, "node %s already has %d volumes published, its limit", node.ID, limit)
	}
	return status.Errorf(codes.ResourceExhausted, "node %s already has %d volumes published and %d attached from the start, its limit %d",
		node.ID, published, preattached, limit)
}

// ControllerUnpublishVolume implements csi.ControllerServer; unpublishing
// what is not published succeeds (spec: idempotent). An empty node_id
// unpublishes the volume from every node.
func (p *Plugin) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	volID, nodeID := req.GetVolumeId(), req.GetNodeId()
	if err := checkID("volume_id", volID); err != nil {
		return nil, err
	}
	if err := checkText("node_id", nodeID); err != nil {
		return nil, err
	}
	nodes := []string{nodeID}
	if nodeID == "" {
		nodes = p.store.PublishedNodes(volID)
	}
	err := p.store.Update(func(tx *state.Tx) error {
		for _, n := range nodes {
			if tx.Publication(volID, n) != nil {
				tx.DeletePublication(volID, n)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// publishable checks that node may use volume v now: a zone of the
// volume is up (else UNAVAILABLE, outage.go), the node is in one of its
// zones, or of their regions under keys.omitZone (else
// FAILED_PRECONDITION), and that zone is up: a regional volume is
// published through its replica in the node's zone, so its other zones
// may be down meanwhile.
func (p *Plugin) publishable(v *state.Volume, node world.NodeInfo) error {
	if err := p.volumeReadable(v); err != nil {
		return err
	}
	if !p.volumeAccessibility() {
		return nil
	}
	zones := v.Zones()
	here := p.topo.Zones[node.Zone].ID()
	switch {
	case !p.reaches(zones, node.Zone):
		return status.Errorf(codes.FailedPrecondition, "volume %s lives in zones %v, node %s in zone %s", v.ID, zones, node.ID, here)
	case p.zoneDown(node.Zone):
		return status.Errorf(codes.Unavailable, "volume %s's replica in zone %s of node %s is down (outage); retry when it is back", v.ID, here, node.ID)
	}
	return nil
}

// reaches says whether a volume in zones (IDs) is accessible from zone i:
// one of them, or under keys.omitZone a zone of one of their regions,
// as its accessible_topology ({region}) tells the CO.
func (p *Plugin) reaches(zones []string, i int) bool {
	z := p.topo.Zones[i]
	if p.topo.Keys.OmitZone {
		return slices.ContainsFunc(zones, func(id string) bool { return strings.HasPrefix(id, z.Region+"/") })
	}
	return slices.Contains(zones, z.ID())
}
