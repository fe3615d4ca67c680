package plugin

import (
	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/state"
)

// Access modes, as csi.proto VolumeCapability.AccessMode defines them. A
// volume lives in its zone's store, which every node of the zone reaches
// (on kind and in fake zones: one data directory), as a zonal shared
// filesystem's share is reached from every node of its zone. So any
// volume may be published to several nodes of its zones at once; what
// limits that is the access mode each publish names, and ControllerPublish
// enforces it across nodes (checkSharing), the node service on one node.

// singleNode: the mode allows one node at a time (SINGLE_NODE_*).
func singleNode(mode csi.VolumeCapability_AccessMode_Mode) bool {
	switch mode {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return true
	}
	return false
}

// readerOnly: the mode allows read-only publishes only. csi.proto:
// SINGLE_NODE_READER_ONLY "Can only be published once as readonly on a
// single node"; MULTI_NODE_READER_ONLY "Can be published as readonly at
// multiple nodes simultaneously". The CO need not say readonly as well:
// Kubernetes maps a ReadOnlyMany claim to MULTI_NODE_READER_ONLY and sends
// readonly only for a PV with spec.csi.readOnly (external-attacher) or a
// pod's readOnly claim (kubelet). So the SP publishes such a volume
// read-only whatever readonly says; readonly=false only means the CO does
// not require it ("Indicates SP MUST publish the volume in readonly
// mode" binds only when true).
func readerOnly(mode csi.VolumeCapability_AccessMode_Mode) bool {
	return mode == csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY ||
		mode == csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
}

// effectiveReadonly is whether a publish with mode and the request's
// readonly flag is read-only.
func effectiveReadonly(mode csi.VolumeCapability_AccessMode_Mode, readonly bool) bool {
	return readonly || readerOnly(mode)
}

// recordedMode reads a publication's Mode; UNKNOWN for records from
// before modes were kept.
func recordedMode(p *state.Publication) csi.VolumeCapability_AccessMode_Mode {
	return csi.VolumeCapability_AccessMode_Mode(csi.VolumeCapability_AccessMode_Mode_value[p.Mode])
}

// checkSharing decides whether a publish of a volume to node, with mode
// and effective readonly, may stand beside the volume's publications on
// other nodes (pubs). Each publication's mode limits all of them:
//   - a SINGLE_NODE_* mode, new or recorded, admits no other node
//     (spec.md ControllerPublishVolume Errors, "Volume published to
//     another node": FAILED_PRECONDITION when the volume "does not have
//     MULTI_NODE volume capability"; the message names the node, as it
//     SHOULD);
//   - MULTI_NODE_SINGLE_WRITER, new or recorded, admits one node
//     publishing read-write ("Only one of the node can be used as
//     read/write. The rest will be readonly."): a second read-write node
//     is FAILED_PRECONDITION too, the same recovery (unpublish the other
//     first), while a read-only publish is admitted;
//   - MULTI_NODE_MULTI_WRITER and MULTI_NODE_READER_ONLY admit any
//     number of nodes (the latter read-only, effectiveReadonly).
func checkSharing(volID string, pubs []*state.Publication, node string, mode csi.VolumeCapability_AccessMode_Mode, readonly bool) error {
	singleWriter := mode == csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER
	writer := ""
	for _, p := range pubs {
		if p.NodeID == node {
			continue
		}
		other := recordedMode(p)
		if singleNode(mode) || singleNode(other) {
			return status.Errorf(codes.FailedPrecondition, "volume %s is published to node %s, and %s admits one node at a time",
				volID, p.NodeID, oneNodeMode(mode, other))
		}
		singleWriter = singleWriter || other == csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER
		if !p.Readonly {
			writer = p.NodeID
		}
	}
	if singleWriter && !readonly && writer != "" {
		return status.Errorf(codes.FailedPrecondition, "volume %s is published read-write to node %s, and MULTI_NODE_SINGLE_WRITER admits one read-write node; publish read-only or unpublish it there first",
			volID, writer)
	}
	return nil
}

// oneNodeMode names the single-node mode among mode and other.
func oneNodeMode(mode, other csi.VolumeCapability_AccessMode_Mode) csi.VolumeCapability_AccessMode_Mode {
	if singleNode(mode) {
		return mode
	}
	return other
}
