package plugin

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/loopdev"
	"github.com/zonepath/zonepath/driver/state"
)

// NodeGetInfo implements csi.NodeServer: the node's ID, attach limit and,
// with VOLUME_ACCESSIBILITY_CONSTRAINTS, its segment.
func (p *Plugin) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	node, _ := p.nodes.lookup(p.cfg.NodeID)
	resp := &csi.NodeGetInfoResponse{NodeId: p.cfg.NodeID, MaxVolumesPerNode: node.MaxVolumesPerNode}
	if p.volumeAccessibility() {
		seg, err := p.topo.NodeSegment(p.cfg.Node.Zone, p.cfg.Node.Rack)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "node segment: %v", err)
		}
		resp.AccessibleTopology = &csi.Topology{Segments: seg}
	}
	return resp, nil
}

// nodeRPCs are the node capabilities this driver reports.
var nodeRPCs = []csi.NodeServiceCapability_RPC_Type{
	csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
	csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
	csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
	csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
}

// NodeGetCapabilities implements csi.NodeServer.
func (p *Plugin) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	rpcs := append(slices.Clone(nodeRPCs), p.nodeHealthRPCs()...)
	return &csi.NodeGetCapabilitiesResponse{Capabilities: wrapAll(rpcs, func(t csi.NodeServiceCapability_RPC_Type) *csi.NodeServiceCapability {
		return &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: t}}}
	})}, nil
}

// checkPath validates a path the CO gives: absolute, clean, in a
// directory of the CO's own (not / or directly under it), and outside the
// driver's own directories, so a request cannot mount over them.
func (p *Plugin) checkPath(field, path string) error {
	if path == "" {
		return status.Errorf(codes.InvalidArgument, "%s is required", field)
	}
	if err := checkText(field, path); err != nil {
		return err
	}
	trimmed := strings.TrimSuffix(path, "/")
	switch {
	case path == "/" || filepath.Dir(trimmed) == "/":
		return status.Errorf(codes.InvalidArgument, "%s %q is / or directly under it, not in a directory of the CO's own", field, truncate(path))
	case !filepath.IsAbs(path) || filepath.Clean(trimmed) != trimmed:
		return status.Errorf(codes.InvalidArgument, "%s %q must be an absolute, clean path", field, truncate(path))
	}
	for _, own := range []string{p.cfg.StateDir, p.cfg.DataDir} {
		if rel, err := filepath.Rel(own, path); err == nil && filepath.IsLocal(rel) || path == own {
			return status.Errorf(codes.InvalidArgument, "%s %q lies inside the driver's directory %s", field, truncate(path), own)
		}
	}
	return nil
}

// checkCODirectory checks that a directory the CO must create exists. Its
// absence is not a malformed request but a node not in the state the call
// needs: FAILED_PRECONDITION, and the driver does not create what the CO
// owns.
func checkCODirectory(what, path string) error {
	st, err := os.Stat(path)
	if err == nil && !st.IsDir() {
		err = errors.New("not a directory")
	}
	if err != nil {
		return status.Errorf(codes.FailedPrecondition, "%s %s, which the CO creates: %v", what, truncate(path), err)
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
	return block, p.nodeVolumeReachable(id)
}

// nodeMountRequest is what NodeStageVolumeRequest and
// NodePublishVolumeRequest share.
type nodeMountRequest interface {
	GetVolumeId() string
	GetVolumeCapability() *csi.VolumeCapability
	GetVolumeContext() map[string]string
	GetPublishContext() map[string]string
}

// checkMountRequest validates what NodeStageVolume and NodePublishVolume
// share, in the order csi-sanity expects the errors, and reports whether
// the volume is a block volume.
func (p *Plugin) checkMountRequest(req nodeMountRequest, pathField, path string) (block bool, err error) {
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return false, err
	}
	if err := p.checkPath(pathField, path); err != nil {
		return false, err
	}
	if req.GetVolumeCapability() == nil {
		return false, status.Error(codes.InvalidArgument, "volume_capability is required")
	}
	if err := checkMap("volume_context", req.GetVolumeContext()); err != nil {
		return false, err
	}
	if err := checkMap("publish_context", req.GetPublishContext()); err != nil {
		return false, err
	}
	if block, err = p.nodeVolume(req.GetVolumeId()); err != nil {
		return false, err
	}
	return block, checkCapabilityFits(req.GetVolumeCapability(), block)
}

// NodeStageVolume implements csi.NodeServer: a filesystem volume is
// bind-mounted at the staging directory; a block volume's device (its
// loop device, or its backing file: blockdev.go) is bind-mounted on a file
// the driver places inside it, since the staging path is a directory for
// every access type (spec: NodeStageVolumeRequest.staging_target_path
// "MUST be a directory").
func (p *Plugin) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	staging := req.GetStagingTargetPath()
	block, err := p.checkMountRequest(req, "staging_target_path", staging)
	if err != nil {
		return nil, err
	}
	flags, err := mountFlags(req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	if err := checkCODirectory("staging_target_path", staging); err != nil {
		return nil, err
	}
	// The flags are recorded, so that staging again with others is
	// ALREADY_EXISTS (NodeStageVolume Errors, "Volume published but is
	// incompatible"), and applied where the workload sees the volume:
	// NodePublishVolume's bind mount, whose flags would replace a stage's.
	m := &state.Mount{VolumeID: req.GetVolumeId(), Path: staging, Staging: true, Block: block, Flags: flags}
	return &csi.NodeStageVolumeResponse{}, p.mount(m, p.volumeSource(m, ""))
}

// volumeSource returns what the stage or publish m bind-mounts: for a
// block volume its device with m's access (blockDevices: the file, or a
// loop device attached now if none backs the file: a rebooted node has
// none); for a filesystem volume the staged directory, or its data when
// staging. It is called only when a mount is due, so an idempotent repeat
// attaches nothing.
func (p *Plugin) volumeSource(m *state.Mount, staged string) func() (string, error) {
	return func() (string, error) {
		switch {
		case m.Block:
			return p.blocks.source(p.data.volumePath(m.VolumeID, true), deviceAccess(m))
		case staged != "":
			return staged, nil
		}
		return p.data.volumePath(m.VolumeID, false), nil
	}
}

// deviceAccess is the access of the block device m binds: read-only for a
// read-only publish (csi.proto NodePublishVolumeRequest.readonly: "the SP
// MUST publish the volume in readonly mode"; only the device can refuse
// writes, see loopBlocks), else read-write. A stage is never read-only:
// NodeStageVolumeRequest has no readonly field.
func deviceAccess(m *state.Mount) loopdev.Access {
	return loopdev.Access(m.Readonly && !m.Staging)
}

// NodeUnstageVolume implements csi.NodeServer.
func (p *Plugin) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if err := p.unmountAt(req.GetVolumeId(), "staging_target_path", req.GetStagingTargetPath(), true); err != nil {
		return nil, err
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// NodePublishVolume implements csi.NodeServer: the staged volume is
// bind-mounted at the target path with the capability's mount_flags
// (mountflags.go), read-only on request, for a reader-only access mode, or
// when ControllerPublishVolume published it read-only; a block volume's
// device node is placed there (spec: "the SP SHALL place the block device
// at target_path"). The plugin
// advertises STAGE_UNSTAGE_VOLUME, so the volume must be staged at the
// given staging path first.
func (p *Plugin) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	target, staging := req.GetTargetPath(), req.GetStagingTargetPath()
	block, err := p.checkMountRequest(req, "target_path", target)
	if err != nil {
		return nil, err
	}
	flags, err := mountFlags(req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	if err := p.checkStaged(req.GetVolumeId(), staging); err != nil {
		return nil, err
	}
	if err := checkCODirectory("the parent of target_path", filepath.Dir(target)); err != nil {
		return nil, err
	}
	if req.GetVolumeCapability().GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER {
		if err := p.checkSingleWriter(req.GetVolumeId(), target); err != nil {
			return nil, err
		}
	}
	controllerReadonly, err := publishedReadonly(req.GetPublishContext())
	if err != nil {
		return nil, err
	}
	// Read-only when asked, when the volume was published to the node
	// read-only (publishReadonlyKey), or when its access mode is a
	// reader-only one (readerOnly).
	mode := req.GetVolumeCapability().GetAccessMode().GetMode()
	readonly := effectiveReadonly(mode, req.GetReadonly()) || controllerReadonly
	m := &state.Mount{VolumeID: req.GetVolumeId(), Path: target, Readonly: readonly, Block: block, Flags: flags}
	return &csi.NodePublishVolumeResponse{}, p.mount(m, p.volumeSource(m, staging))
}

// checkStaged: without a staging path, or with one the volume was never
// staged at, there is nothing to publish (spec: NodePublishVolume Errors,
// "Staging target path not set" is FAILED_PRECONDITION when
// STAGE_UNSTAGE_VOLUME is set; the recovery, NodeStageVolume first, is the
// same for a path never staged).
func (p *Plugin) checkStaged(volID, staging string) error {
	if staging == "" {
		return status.Error(codes.FailedPrecondition, "staging_target_path is not set, but this plugin has STAGE_UNSTAGE_VOLUME: call NodeStageVolume first")
	}
	if err := p.checkPath("staging_target_path", staging); err != nil {
		return err
	}
	var m *state.Mount
	p.store.View(func(r state.Reader) { m = r.Mount(volID, staging) })
	if m == nil || !m.Staging {
		return status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s: call NodeStageVolume first", volID, truncate(staging))
	}
	return nil
}

// checkSingleWriter: a SINGLE_NODE_SINGLE_WRITER volume is published at
// one target path at most (spec: NodePublishVolume Errors, FAILED_PRECONDITION).
func (p *Plugin) checkSingleWriter(volID, target string) error {
	var other string
	p.store.View(func(r state.Reader) {
		for _, m := range r.MountsOf(volID) {
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

// NodeUnpublishVolume implements csi.NodeServer; the target path the
// driver created is removed, as the CO expects.
func (p *Plugin) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if err := p.unmountAt(req.GetVolumeId(), "target_path", req.GetTargetPath(), false); err != nil {
		return nil, err
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// unmountAt checks volID and path (the request's field named field) and
// undoes the stage (staging) or publish of the volume there.
func (p *Plugin) unmountAt(volID, field, path string, staging bool) error {
	if err := checkID("volume_id", volID); err != nil {
		return err
	}
	if err := p.checkPath(field, path); err != nil {
		return err
	}
	return p.unmount(volID, path, staging)
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

// mountPoint is where a stage or publish puts the volume: its path, or
// for a block volume's staging a file named after the volume inside the
// staging directory.
func mountPoint(m *state.Mount) string {
	if m.Block && m.Staging {
		return filepath.Join(m.Path, m.VolumeID)
	}
	return m.Path
}

// mount makes m's mount point and bind-mounts source() there,
// idempotently: the same mount again succeeds, a different one at the
// same path is ALREADY_EXISTS. The record is written after the mount; a
// retry after a crash in between finds the volume already showing there
// and only records it.
func (p *Plugin) mount(m *state.Mount, source func() (string, error)) error {
	var existing *state.Mount
	p.store.View(func(r state.Reader) { existing = r.Mount(m.VolumeID, m.Path) })
	if existing != nil {
		if existing.Readonly != m.Readonly || existing.Block != m.Block || existing.Staging != m.Staging || !slices.Equal(existing.Flags, m.Flags) {
			return status.Errorf(codes.AlreadyExists, "volume %s is already mounted at %s with other options", m.VolumeID, m.Path)
		}
		if !p.lostDevice(existing) {
			return nil
		}
	}
	point := mountPoint(m)
	created, err := makeMountPoint(point, m.Block, m.Staging)
	if err != nil {
		return err
	}
	if !p.showsVolume(point, m) {
		src, err := source()
		if err == nil {
			err = p.mounter.bind(src, point, bindOptions(m))
		}
		if err != nil {
			if created {
				os.Remove(point)
			}
			if m.Block && p.lastUserOfDevice(m) {
				_ = p.blocks.release(p.data.volumePath(m.VolumeID, true), deviceAccess(m)) // attached for nothing
			}
			return status.Errorf(codes.Internal, "bind-mounting volume %s at %s: %v", m.VolumeID, point, err)
		}
	}
	m.Mounted = p.mounter.kind() != "none"
	return p.store.Update(func(tx *state.Tx) error { tx.PutMount(m); return nil })
}

// lostDevice reports whether a block volume recorded as mounted no longer
// shows at its mount point: the node rebooted (mounts and loop devices
// are gone, the state is not), so the stage or publish is done again. The
// kernel's view wins over the record.
func (p *Plugin) lostDevice(m *state.Mount) bool {
	return m.Block && m.Mounted && p.blocks.kind() == BlockDevicesLoop && !p.showsVolume(mountPoint(m), m)
}

// makeMountPoint creates what a bind mount covers: a file for a block
// volume (spec: "the SP SHALL place the block device at target_path"), a
// directory for a filesystem's target. A filesystem's staging directory
// is the CO's and exists already. created says whether it made one.
func makeMountPoint(path string, block, staging bool) (created bool, err error) {
	if staging && !block {
		return false, nil
	}
	if block {
		var f *os.File
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL, 0o660); err == nil {
			return true, f.Close()
		}
	} else if err = os.Mkdir(path, 0o750); err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, status.Errorf(codes.Internal, "creating %s: %v", path, err)
	}
	if st, serr := os.Stat(path); serr != nil || st.IsDir() == block {
		want := "directory"
		if block {
			want = "file"
		}
		return false, status.Errorf(codes.FailedPrecondition, "%s exists, but is not a %s", path, want)
	}
	return false, nil
}

// showsVolume reports whether path shows the volume's own data as m
// binds it: a bind mount of it, which stat sees as the data's inode, or
// of the loop device with m's access its file backs. Only such a mount is
// the driver's; one someone else made at the path never is.
func (p *Plugin) showsVolume(path string, m *state.Mount) bool {
	return p.showsVolumeAs(path, m, deviceAccess(m))
}

func (p *Plugin) showsVolumeAs(path string, m *state.Mount, access loopdev.Access) bool {
	at, err := os.Stat(path)
	if err != nil {
		return false
	}
	if m.Block {
		return p.blocks.shows(at, p.data.volumePath(m.VolumeID, true), access)
	}
	return sameFileAs(at, p.data.volumePath(m.VolumeID, false))
}

// showsVolumeAnyway is showsVolume with a block volume's device of either
// access: what an unmount must undo. A read-only publish made before
// read-only devices bound the read-write device; one repeated since is
// the read-only device bound over it.
func (p *Plugin) showsVolumeAnyway(path string, m *state.Mount) bool {
	return p.showsVolume(path, m) || m.Block && p.showsVolumeAs(path, m, !deviceAccess(m))
}

// unmount undoes a stage or publish at path. It acts only where the
// volume is recorded as staged (or published) at path; anywhere else it
// succeeds without touching anything (spec: NodeUnstageVolume "If the
// volume ... is not staged to the staging_target_path, the Plugin MUST
// reply 0 OK"; NodeUnpublishVolume is idempotent likewise). It unmounts
// only its own mount and removes only what it created: the target, or the
// file of a block volume in a staging directory, never the CO's staging
// directory, nor a directory holding files it did not put there. The last
// unmount of a block volume detaches its loop device (spec: NodeUnstageVolume
// "undo the work by the corresponding NodeStageVolume").
func (p *Plugin) unmount(volID, path string, staging bool) error {
	var m *state.Mount
	p.store.View(func(r state.Reader) { m = r.Mount(volID, path) })
	if m == nil || m.Staging != staging {
		return nil
	}
	point := mountPoint(m)
	if err := p.unmountVolume(point, m); err != nil {
		return err
	}
	if !staging || m.Block {
		if err := removeCreated(point); err != nil {
			return err
		}
	}
	if m.Block && p.lastUserOfDevice(m) {
		if err := p.blocks.release(p.data.volumePath(volID, true), deviceAccess(m)); err != nil {
			return status.Errorf(codes.Internal, "detaching the %s device of volume %s: %v", deviceAccess(m), volID, err)
		}
	}
	return p.store.Update(func(tx *state.Tx) error {
		if tx.Mount(volID, path) != nil {
			tx.DeleteMount(volID, path)
		}
		return nil
	})
}

// unmountVolume unmounts the driver's mounts at point: one, or two where
// a read-only publish from before read-only devices was repeated since
// (showsVolumeAnyway). Whatever else is mounted there stays.
func (p *Plugin) unmountVolume(point string, m *state.Mount) error {
	for range 2 {
		if !p.showsVolumeAnyway(point, m) {
			return nil
		}
		if err := p.mounter.unmount(point); err != nil {
			return status.Errorf(codes.Internal, "unmounting %s: %v", point, err)
		}
	}
	return nil
}

// lastUserOfDevice reports whether m, the volume's mount at m.Path, is the
// only one on this node whose device has m's access (deviceAccess): then
// that device is no longer needed. Detaching before the record goes makes
// a retry after a crash find nothing attached.
func (p *Plugin) lastUserOfDevice(m *state.Mount) bool {
	last := true
	p.store.View(func(r state.Reader) {
		for _, other := range r.MountsOf(m.VolumeID) {
			last = last && (other.Path == m.Path || deviceAccess(other) != deviceAccess(m))
		}
	})
	return last
}

// removeCreated removes a mount point the driver created. A directory
// that holds files now holds someone else's: it stays. One that is still
// a mount point is someone else's mount over the driver's: the CO must
// undo it first.
func removeCreated(path string) error {
	err := os.Remove(path)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
		klog.InfoS("Leaving a target that holds files the driver did not put there", "path", path)
		return nil
	case errors.Is(err, syscall.EBUSY):
		return status.Errorf(codes.FailedPrecondition, "removing %s: something the driver did not mount is mounted there", path)
	}
	return status.Errorf(codes.Internal, "removing %s: %v", path, err)
}

// NodeGetVolumeStats implements csi.NodeServer for a path the volume is
// staged or published at.
func (p *Plugin) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	if err := checkVolumePath(req.GetVolumeId(), req.GetVolumePath()); err != nil {
		return nil, err
	}
	block, err := p.nodeVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	var m *state.Mount
	p.store.View(func(r state.Reader) { m = r.Mount(req.GetVolumeId(), req.GetVolumePath()) })
	if m == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s is not staged or published at %s", req.GetVolumeId(), req.GetVolumePath())
	}
	capacity := p.volumeCapacity(req.GetVolumeId(), block)
	if block {
		if size, ok := p.blocks.size(p.data.volumePath(req.GetVolumeId(), true)); ok {
			capacity = size // what the device shows, which a pod sees
		}
		return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{{Unit: csi.VolumeUsage_BYTES, Total: capacity}}}, nil
	}
	used, inodes, err := p.data.usage(req.GetVolumeId())
	if err != nil {
		return nil, dataStatus(err, "measuring volume %s", req.GetVolumeId())
	}
	return &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{
		{Unit: csi.VolumeUsage_BYTES, Total: capacity, Used: used, Available: max(0, capacity-used)},
		{Unit: csi.VolumeUsage_INODES, Used: inodes},
	}}, nil
}

// checkVolumePath validates the volume_id and volume_path of
// NodeGetVolumeStats and NodeExpandVolume, which both name a volume by a
// path it is staged or published at.
func checkVolumePath(volID, path string) error {
	if err := checkID("volume_id", volID); err != nil {
		return err
	}
	if path == "" {
		return status.Error(codes.InvalidArgument, "volume_path is required")
	}
	return checkText("volume_path", path)
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
// directories, so nothing grows on the node; a block volume's loop device
// is told its file's new size. The new size is confirmed.
func (p *Plugin) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if err := checkVolumePath(req.GetVolumeId(), req.GetVolumePath()); err != nil {
		return nil, err
	}
	if req.GetCapacityRange().GetRequiredBytes() < 0 || req.GetCapacityRange().GetLimitBytes() < 0 {
		return nil, status.Error(codes.InvalidArgument, "capacity_range: bytes must not be negative")
	}
	block, err := p.nodeVolume(req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	if block {
		// The controller grew the file; a loop device keeps its size
		// until told (LOOP_SET_CAPACITY).
		if err := p.blocks.resize(p.data.volumePath(req.GetVolumeId(), true)); err != nil {
			return nil, status.Errorf(codes.Internal, "resizing the device of volume %s: %v", req.GetVolumeId(), err)
		}
	}
	size := req.GetCapacityRange().GetRequiredBytes()
	if size == 0 {
		size = p.volumeCapacity(req.GetVolumeId(), block)
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: size}, nil
}
