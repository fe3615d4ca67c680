package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// NodeGetInfo implements csi.NodeServer: the node's ID, attach limit and,
// with VOLUME_ACCESSIBILITY_CONSTRAINTS, its segment.
func (p *Plugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	node, _ := p.nodes.lookup(p.cfg.NodeID)
	resp := &csi.NodeGetInfoResponse{NodeId: p.cfg.NodeID, MaxVolumesPerNode: node.MaxVolumesPerNode}
	if p.volumeTopology() {
		seg, err := p.topo.NodeSegment(p.cfg.Node.Zone, p.cfg.Node.Rack)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "node segment: %v", err)
		}
		resp.AccessibleTopology = &csi.Topology{Segments: seg}
	}
	return resp, nil
}

// NodeGetCapabilities implements csi.NodeServer.
func (p *Plugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, c := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: c}}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// checkPath validates a path the CO gives: absolute, clean, and outside
// the driver's own directories, so a request cannot mount over them.
func (p *Plugin) checkPath(field, path string) error {
	switch {
	case path == "":
		return status.Errorf(codes.InvalidArgument, "%s is required", field)
	case !filepath.IsAbs(path) || filepath.Clean(strings.TrimSuffix(path, "/")) != strings.TrimSuffix(path, "/"):
		return status.Errorf(codes.InvalidArgument, "%s %q must be an absolute, clean path", field, truncate(path))
	}
	for _, own := range []string{p.cfg.StateDir, p.cfg.DataDir} {
		if rel, err := filepath.Rel(own, path); err == nil && filepath.IsLocal(rel) || path == own {
			return status.Errorf(codes.InvalidArgument, "%s %q lies inside the driver's directory %s", field, truncate(path), own)
		}
	}
	return nil
}

// nodeVolume checks a volume ID and finds its data on this machine.
func (p *Plugin) nodeVolume(id string) (block bool, err error) {
	if err := checkID("volume_id", id); err != nil {
		return false, err
	}
	exists, block := p.data.volumeExists(id)
	if !exists {
		return false, status.Errorf(codes.NotFound, "volume %s does not exist on node %s", id, p.cfg.NodeID)
	}
	return block, nil
}

// checkMountRequest validates what NodeStageVolume and NodePublishVolume
// share, in the order csi-sanity expects the errors, and reports whether
// the volume is a block volume.
func (p *Plugin) checkMountRequest(volID, pathField, path string, capability *csi.VolumeCapability) (block bool, err error) {
	if err := checkID("volume_id", volID); err != nil {
		return false, err
	}
	if err := p.checkPath(pathField, path); err != nil {
		return false, err
	}
	if capability == nil {
		return false, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	if block, err = p.nodeVolume(volID); err != nil {
		return false, err
	}
	return block, checkCapabilityFits(capability, block)
}

// NodeStageVolume implements csi.NodeServer: a filesystem volume is
// bind-mounted at the staging path; a block volume needs no staging.
func (p *Plugin) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	block, err := p.checkMountRequest(req.GetVolumeId(), "staging_target_path", req.GetStagingTargetPath(), req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	m := &state.Mount{VolumeID: req.GetVolumeId(), Path: req.GetStagingTargetPath(), Staging: true, Block: block}
	return &csi.NodeStageVolumeResponse{}, p.mount(m, p.data.volumePath(m.VolumeID, block))
}

// NodeUnstageVolume implements csi.NodeServer.
func (p *Plugin) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if err := p.checkPath("staging_target_path", req.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	return &csi.NodeUnstageVolumeResponse{}, p.unmount(req.GetVolumeId(), req.GetStagingTargetPath(), false)
}

// NodePublishVolume implements csi.NodeServer: the staging mount (or the
// volume's data) is bind-mounted at the target path, read-only on request.
func (p *Plugin) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	block, err := p.checkMountRequest(req.GetVolumeId(), "target_path", req.GetTargetPath(), req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	source := p.data.volumePath(req.GetVolumeId(), block)
	if staging := req.GetStagingTargetPath(); staging != "" && !block {
		if err := p.checkPath("staging_target_path", staging); err != nil {
			return nil, err
		}
		source = staging
	}
	if req.GetVolumeCapability().GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		if err := p.checkSingleWriter(req.GetVolumeId(), req.GetTargetPath()); err != nil {
			return nil, err
		}
	}
	m := &state.Mount{VolumeID: req.GetVolumeId(), Path: req.GetTargetPath(), Readonly: req.GetReadonly(), Block: block}
	return &csi.NodePublishVolumeResponse{}, p.mount(m, source)
}

// checkSingleWriter: a SINGLE_NODE_SINGLE_WRITER volume is published at
// one target path at most (spec: NodePublishVolume Errors, FAILED_PRECONDITION).
func (p *Plugin) checkSingleWriter(volID, target string) error {
	var other string
	p.store.View(func(tx *state.Tx) {
		for _, m := range tx.MountsOf(volID) {
			if !m.Staging && m.Path != target {
				other = m.Path
			}
		}
	})
	if other != "" {
		return status.Errorf(codes.FailedPrecondition, "volume %s is SINGLE_NODE_SINGLE_WRITER and already published at %s", volID, other)
	}
	return nil
}

// NodeUnpublishVolume implements csi.NodeServer; the target path is
// removed, as the CO expects.
func (p *Plugin) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if err := p.checkPath("target_path", req.GetTargetPath()); err != nil {
		return nil, err
	}
	return &csi.NodeUnpublishVolumeResponse{}, p.unmount(req.GetVolumeId(), req.GetTargetPath(), true)
}

func checkCapabilityFits(c *csi.VolumeCapability, block bool) error {
	if _, err := accessType([]*csi.VolumeCapability{c}); err != nil {
		return status.Errorf(codes.InvalidArgument, "volume_capability: %s", status.Convert(err).Message())
	}
	if (c.GetBlock() != nil) != block {
		// CSI: NodeStageVolume/NodePublishVolume Errors, "Exceeds capabilities".
		return status.Error(codes.FailedPrecondition, "volume_capability: access type differs from the volume's")
	}
	return nil
}

// mount makes m's path and bind-mounts source there, idempotently: the
// same mount again succeeds, a different one at the same path is
// ALREADY_EXISTS. The record is written after the mount, so a crash in
// between leaves a mount the CO's retry finds and records.
func (p *Plugin) mount(m *state.Mount, source string) error {
	var existing *state.Mount
	p.store.View(func(tx *state.Tx) { existing = tx.Mount(m.VolumeID, m.Path) })
	if existing != nil {
		if existing.Readonly != m.Readonly || existing.Block != m.Block || existing.Staging != m.Staging {
			return status.Errorf(codes.AlreadyExists, "volume %s is already mounted at %s with other options", m.VolumeID, m.Path)
		}
		return nil
	}
	if err := makeTarget(m.Path, m.Block, m.Staging); err != nil {
		return status.Errorf(codes.Internal, "creating %s: %v", m.Path, err)
	}
	if err := p.mounter.bind(source, m.Path, m.Readonly); err != nil {
		return status.Errorf(codes.Internal, "bind-mounting volume %s at %s: %v", m.VolumeID, m.Path, err)
	}
	m.Mounted = p.mounter.kind() != "none"
	return p.store.Update(func(tx *state.Tx) error { tx.PutMount(m); return nil })
}

// makeTarget creates a publish target: a file for block volumes (bind
// mounts need a file to cover), a directory otherwise. Staging paths are
// the CO's to create.
func makeTarget(path string, block, staging bool) error {
	if staging {
		return os.MkdirAll(path, 0o750)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if !block {
		return os.MkdirAll(path, 0o750)
	}
	f, err := os.OpenFile(path, os.O_CREATE, 0o660)
	if err != nil {
		return err
	}
	return f.Close()
}

func (p *Plugin) unmount(volID, path string, removeTarget bool) error {
	if err := p.mounter.unmount(path); err != nil {
		return status.Errorf(codes.Internal, "unmounting %s: %v", path, err)
	}
	if removeTarget {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return status.Errorf(codes.Internal, "removing %s: %v", path, err)
		}
	}
	return p.store.Update(func(tx *state.Tx) error {
		if tx.Mount(volID, path) != nil {
			tx.DeleteMount(volID, path)
		}
		return nil
	})
}

// NodeGetVolumeStats implements csi.NodeServer for a path the volume is
// staged or published at.
func (p *Plugin) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_path is required")
	}
	block, err := p.nodeVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	var m *state.Mount
	p.store.View(func(tx *state.Tx) { m = tx.Mount(req.GetVolumeId(), req.GetVolumePath()) })
	if m == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s is not staged or published at %s", req.GetVolumeId(), req.GetVolumePath())
	}
	capacity := p.volumeCapacity(req.GetVolumeId(), block)
	if block {
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: capacity}}}, nil
	}
	used, inodes, err := p.data.usage(req.GetVolumeId())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "measuring volume %s: %v", req.GetVolumeId(), err)
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: capacity, Used: used, Available: max(0, capacity-used)},
		{Unit: csi.VolumeUsage_INODES, Used: inodes},
	}}, nil
}

// volumeCapacity is the recorded capacity when this process is also the
// controller, else the block file's size, else 0 (unknown).
func (p *Plugin) volumeCapacity(id string, block bool) int64 {
	if v := p.store.Volume(id); v != nil {
		return v.CapacityBytes
	}
	if st, err := os.Stat(p.data.volumePath(id, block)); err == nil && block {
		return st.Size()
	}
	return 0
}

// NodeExpandVolume implements csi.NodeServer. Filesystem volumes are
// directories, so nothing grows on the node; the new size is confirmed.
func (p *Plugin) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if req.GetVolumePath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume_path is required")
	}
	block, err := p.nodeVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if size == 0 {
		size = p.volumeCapacity(req.GetVolumeId(), block)
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}
