package sanity

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	snapshotTopologyCap = csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS
	volumeTopologyCap   = csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS
	createDeleteSnap    = csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT
	publishUnpublish    = csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME
)

// Labels name the rules, so a vendor can focus on one and the summary of
// bin/zonepath-sanity names what failed.
var (
	ruleCapability = Label("snapshot-topology", "rule:capability")
	ruleRequisite  = Label("snapshot-topology", "rule:requisite")
	rulePreferred  = Label("snapshot-topology", "rule:preferred")
	ruleConsistent = Label("snapshot-topology", "rule:consistent")
	ruleExhausted  = Label("snapshot-topology", "rule:resource-exhausted")
	ruleIdempotent = Label("snapshot-topology", "rule:idempotent")
	ruleUnknown    = Label("snapshot-topology", "rule:unknown-topology")
	// The volume side of the same rules: volume topology alone.
	ruleIdempotentVolume = Label("volume-topology", "rule:idempotent")
	ruleUnknownVolume    = Label("volume-topology", "rule:unknown-topology")
	ruleRestore          = Label("snapshot-topology", "rule:restore")
	ruleAttachLimit      = Label("attach-limit", "rule:attach-limit")
	ruleTopologyKeys     = Label("snapshot-topology", "rule:topology-keys")
)

func code(err error) codes.Code { return status.Code(err) }

// suite holds what every extension test uses: the upstream test context,
// the resources the current test created, and the driver's answers.
type suite struct {
	sc *sanity.TestContext
	r  *sanity.Resources
	d  driver
}

// describe registers an extension suite beside csi-sanity's. Each test
// starts with fresh resources, cleaned up after it, once every need holds
// (a need skips the test when it does not). The connections exist only
// once upstream's BeforeEach has dialled, so the resources are made there.
func describe(text string, needs []func(*suite), body func(s *suite)) bool {
	return sanity.DescribeSanity(text, func(sc *sanity.TestContext) {
		s := &suite{sc: sc, d: driver{sc}}
		BeforeEach(func() {
			s.r = &sanity.Resources{
				Context: sc, ControllerClient: csi.NewControllerClient(sc.ControllerConn), NodeClient: csi.NewNodeClient(sc.Conn),
			}
			for _, need := range needs {
				need(s)
			}
		})
		AfterEach(func() { s.r.Cleanup() })
		body(s)
	})
}

func (s *suite) needSnapshots() {
	if !s.d.controllerCapability(createDeleteSnap) {
		Skip("CREATE_DELETE_SNAPSHOT not supported: the driver cuts no snapshots")
	}
}

func (s *suite) needPublish() {
	if !s.d.controllerCapability(publishUnpublish) {
		Skip("PUBLISH_UNPUBLISH_VOLUME not supported: the controller publishes to no node")
	}
}

func (s *suite) needSnapshotTopology() {
	s.needSnapshots()
	if !s.d.pluginCapability(snapshotTopologyCap) {
		Skip("SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not advertised: the driver's snapshots are usable from everywhere, no snapshot topology rule applies")
	}
}

func (s *suite) needVolumeTopology() {
	if !s.d.pluginCapability(volumeTopologyCap) {
		Skip("VOLUME_ACCESSIBILITY_CONSTRAINTS not advertised: volumes carry no topology to compare")
	}
}

// needSegments returns n distinct satisfiable segments or skips.
func (s *suite) needSegments(n int) []*csi.Topology {
	segs := s.d.segments()
	if len(segs) < n {
		Skip(fmt.Sprintf("needs %d segments the driver can satisfy, %d known: give more with --zonepath.segment", n, len(segs)))
	}
	return segs
}

// volume creates a source volume, placed in seg when the driver takes
// volume topology.
func (s *suite) volume(name string, seg *csi.Topology) *csi.Volume {
	req := sanity.MakeCreateVolumeReq(s.sc, sanity.UniqueString(name))
	if seg != nil && s.d.pluginCapability(volumeTopologyCap) {
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{seg}, Preferred: []*csi.Topology{seg}}
	}
	return s.r.MustCreateVolume(context.Background(), req).GetVolume()
}

func (s *suite) snapshotRequest(name, source string, req *csi.TopologyRequirement) *csi.CreateSnapshotRequest {
	r := sanity.MakeCreateSnapshotReq(s.sc, sanity.UniqueString(name), source)
	r.AccessibilityRequirements = req
	return r
}
