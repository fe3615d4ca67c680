package plugin_test

import (
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/zonepath/zonepath/driver/drivertest"
	worldpkg "github.com/zonepath/zonepath/driver/world"
	zpsanity "github.com/zonepath/zonepath/sanity"
)

// brokenUpstreamTest compares protobuf messages with gomega's Equal, which
// compares their internal state too, so it fails for every driver that
// returns accessible_topology. TestSnapshotAccessibilityRequirements
// covers the same behaviour with proto.Equal.
const brokenUpstreamTest = "should succeed when creating a snapshot with accessibility requirements"

// TestSanity runs the whole upstream csi-sanity suite, and the zonepath
// extensions registered by blank-importing package sanity (the way a
// vendor adds them to their own suite), against the driver started
// in-process on a unix socket.
func TestSanity(t *testing.T) {
	if testing.Short() {
		t.Skip("csi-sanity takes a while; run without -short")
	}
	world, err := worldpkg.Load("../../sanity/testdata/world.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A fault file, so that the volume health extensions can take the
	// node's zone down (an outage rule) and bring it back.
	d := drivertest.Start(t, drivertest.Options{Topology: world, Faults: drivertest.NoRules, Config: maxVolumesPerNode(3)})
	extensions, err := zpsanity.LoadConfig("../../sanity/testdata/zonepath.yaml")
	if err == nil {
		extensions.OutageCommand, extensions.RecoverCommand = d.OutageCommands(t, worldpkg.DefaultZoneKey, "zone-a")
		err = zpsanity.SetConfig(extensions)
	}
	if err != nil {
		t.Fatal(err)
	}
	// auto: loop devices where this process can attach them (root, as in
	// CI), else the volumes' files; the suite must pass either way.
	t.Logf("block volumes on the node: %s", d.Plugin.BlockDevicesKind())
	cfg := sanity.NewTestConfig()
	cfg.Address = d.Endpoint
	cfg.TargetPath = filepath.Join(t.TempDir(), "target")
	cfg.StagingPath = filepath.Join(t.TempDir(), "staging")
	cfg.TestNodeVolumeAttachLimit = true
	cfg.IdempotentCount = 3
	// What -csi.testvolumemutableparameters passes: without it upstream's
	// ModifyVolume tests send empty mutable_parameters and change nothing.
	cfg.TestVolumeMutableParametersFile = "../../sanity/testdata/mutable-parameters.yaml"
	sanity.GinkgoTest(&cfg)
	RegisterFailHandler(Fail)
	suite, reporter := GinkgoConfiguration()
	suite.SkipStrings = []string{brokenUpstreamTest}
	RunSpecs(t, "csi-sanity v5.6.0 and zonepath extensions against zonepath", suite, reporter)
}
