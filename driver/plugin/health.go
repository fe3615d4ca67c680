package plugin

import (
	"context"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// Volume health, CSI v1.13's alpha RPCs. What the driver knows of a
// volume's health is whether its zone is up (outage.go); each capability
// can be switched off (DisableCapabilities), and then its RPC is
// UNIMPLEMENTED, "disabled in the Plugin's current mode of operation"
// (spec.md General Error Table, "Call not implemented").

func (p *Plugin) volumeHealthCap() bool { return !p.cfg.DisableVolumeHealth }
func (p *Plugin) listVolumeHealthCap() bool {
	return p.volumeHealthCap() && !p.cfg.DisableListVolumeHealth
}
func (p *Plugin) storageHealthCap() bool { return !p.cfg.DisableStorageHealth }

// controllerHealthRPCs are the health capabilities the controller reports.
// LIST_VOLUME_HEALTH goes only with GET_VOLUME_HEALTH: "A plugin which
// supports the LIST_VOLUME_HEALTH capability MUST also support the
// GET_VOLUME_HEALTH capability" (spec.md ControllerServiceCapability).
func (p *Plugin) controllerHealthRPCs() []csi.ControllerServiceCapability_RPC_Type {
	return switchedOn([]csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH, csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH,
	}, p.volumeHealthCap(), p.listVolumeHealthCap())
}

// nodeHealthRPCs are the health capabilities the node reports.
func (p *Plugin) nodeHealthRPCs() []csi.NodeServiceCapability_RPC_Type {
	return switchedOn([]csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH, csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH,
	}, p.volumeHealthCap(), p.storageHealthCap())
}

// switchedOn keeps the capabilities whose switch (same index) is on.
func switchedOn[T any](caps []T, on ...bool) []T {
	var out []T
	for i, c := range caps {
		if on[i] {
			out = append(out, c)
		}
	}
	return out
}

func disabled(rpc string) error {
	return status.Errorf(codes.Unimplemented, "%s is switched off in this driver (--disable-capabilities)", rpc)
}

// ControllerGetVolumeHealth implements csi.ControllerServer: a known,
// healthy volume gets an entry with empty health_statuses ("The Plugin
// SHOULD return a VolumeHealth entry with empty health_statuses when the
// volume is known and no adverse health condition exists"), an unknown one
// NOT_FOUND (ControllerGetVolumeHealth Errors, "Volume does not exist").
func (p *Plugin) ControllerGetVolumeHealth(ctx context.Context, req *csi.ControllerGetVolumeHealthRequest) (*csi.ControllerGetVolumeHealthResponse, error) {
	if !p.volumeHealthCap() {
		return nil, disabled("ControllerGetVolumeHealth")
	}
	if err := checkID("volume_id", req.GetVolumeId()); err != nil {
		return nil, err
	}
	v := p.store.Volume(req.GetVolumeId())
	if v == nil {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist", req.GetVolumeId())
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: p.controllerHealth(v)}, nil
}

// ControllerListVolumeHealth implements csi.ControllerServer. It lists only
// volumes with an adverse condition ("The Plugin SHOULD omit volumes with
// no known adverse health condition when listing all volume health"), in
// volume ID order, paged like ListVolumes: at most max_entries ("the
// Plugin MUST NOT return more entries than this number"), next_token set
// when more follow, a token it did not issue ABORTED
// (ControllerListVolumeHealth Errors, "Invalid starting_token").
func (p *Plugin) ControllerListVolumeHealth(ctx context.Context, req *csi.ControllerListVolumeHealthRequest) (*csi.ControllerListVolumeHealthResponse, error) {
	if !p.listVolumeHealthCap() {
		return nil, disabled("ControllerListVolumeHealth")
	}
	if req.GetMaxEntries() < 0 {
		return nil, status.Errorf(codes.InvalidArgument, "max_entries %d must not be negative", req.GetMaxEntries())
	}
	from, err := decodeToken(req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	if len(p.cfg.Faults.Outages()) == 0 {
		return &csi.ControllerListVolumeHealthResponse{}, nil // nothing can be unhealthy: no walk of every volume
	}
	vols, next := p.store.ListVolumesWhere(from, int(req.GetMaxEntries()), func(v *state.Volume) bool { return p.volumeReachable(v) != nil })
	resp := &csi.ControllerListVolumeHealthResponse{}
	for _, v := range vols {
		resp.Entries = append(resp.Entries, p.controllerHealth(v))
	}
	if next != "" {
		resp.NextToken = encodeToken(next)
	}
	return resp, nil
}

// NodeGetVolumeHealth implements csi.NodeServer: the volume as this node
// sees it. It answers for a volume that is not staged or published (the
// RPC "MAY be called for a volume that is not currently staged or
// published on the node"), so the paths are only checked for form; a
// volume without data on this machine is NOT_FOUND (NodeGetVolumeHealth
// Errors, "Volume does not exist").
func (p *Plugin) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.NodeGetVolumeHealthResponse, error) {
	if !p.volumeHealthCap() {
		return nil, disabled("NodeGetVolumeHealth")
	}
	id := req.GetVolumeId()
	if err := checkID("volume_id", id); err != nil {
		return nil, err
	}
	if err := checkOptionalPath("volume_publish_path", req.GetVolumePublishPath()); err != nil {
		return nil, err
	}
	if err := checkOptionalPath("staging_target_path", req.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	if exists, _ := p.data.volumeExists(id); !exists {
		return nil, status.Errorf(codes.NotFound, "volume %s does not exist on node %s", id, p.cfg.NodeID)
	}
	return &csi.NodeGetVolumeHealthResponse{VolumeHealth: healthOf(id, p.nodeVolumeReachable(id))}, nil
}

// NodeGetStorageHealth implements csi.NodeServer: the zone's storage is
// STORAGE_UNREACHABLE while the node's zone is down, healthy otherwise
// (no entries).
func (p *Plugin) NodeGetStorageHealth(ctx context.Context, req *csi.NodeGetStorageHealthRequest) (*csi.NodeGetStorageHealthResponse, error) {
	if !p.storageHealthCap() {
		return nil, disabled("NodeGetStorageHealth")
	}
	resp := &csi.NodeGetStorageHealthResponse{}
	if p.zoneDown(p.cfg.Node.Zone) {
		zone := p.topo.Zones[p.cfg.Node.Zone].ID()
		resp.BackendHealth = []*csi.NodeGetStorageHealthResponse_StorageBackendHealth{{
			Status: csi.StorageHealthErrorType_STORAGE_UNREACHABLE, Reason: ReasonZoneDown,
			Message: "the storage of zone " + zone + " is down (outage)",
		}}
	}
	return resp, nil
}

// checkOptionalPath checks a path NodeGetVolumeHealth may be given: "If not
// empty, it MUST be an absolute path in the root filesystem of the process
// serving this request". The driver only reads it, so no more is needed.
func checkOptionalPath(field, path string) error {
	if path == "" {
		return nil
	}
	if err := checkText(field, path); err != nil {
		return err
	}
	if !filepath.IsAbs(path) {
		return status.Errorf(codes.InvalidArgument, "%s %q is not an absolute path", field, truncate(path))
	}
	return nil
}
