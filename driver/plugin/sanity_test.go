package plugin_test

import (
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
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
	world, err := world.Load("../../sanity/testdata/world.yaml")
	if err != nil {
		t.Fatal(err)
	}
	extensions, err := zpsanity.LoadConfig("../../sanity/testdata/zonepath.yaml")
	if err == nil {
		err = zpsanity.SetConfig(extensions)
	}
	if err != nil {
		t.Fatal(err)
	}
	endpoint := startDriver(t, plugin.Config{MaxVolumesPerNode: 3, Topology: world})
	cfg := sanity.NewTestConfig()
	cfg.Address = endpoint
	cfg.TargetPath = filepath.Join(t.TempDir(), "target")
	cfg.StagingPath = filepath.Join(t.TempDir(), "staging")
	cfg.TestNodeVolumeAttachLimit = true
	cfg.IdempotentCount = 3
	sanity.GinkgoTest(&cfg)
	RegisterFailHandler(Fail)
	suite, reporter := GinkgoConfiguration()
	suite.SkipStrings = []string{brokenUpstreamTest}
	RunSpecs(t, "csi-sanity v5.6.0 and zonepath extensions against zonepath", suite, reporter)
}

// startDriver serves a plugin on a fresh unix socket until the test ends.
func startDriver(t testing.TB, cfg plugin.Config) string {
	t.Helper()
	endpoint, _, _ := serveDriver(t, cfg)
	return endpoint
}

// serveDriver serves a plugin on a fresh unix socket, on cfg.StateDir when
// set (so a test can restart a driver on the same state), until stop is
// called or the test ends.
func serveDriver(t testing.TB, cfg plugin.Config) (endpoint string, p *plugin.Plugin, stop func()) {
	t.Helper()
	dir := t.TempDir()
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(dir, "state")
	}
	cfg.NodeID = "node-1"
	cfg.ServeController, cfg.ServeNode = true, true
	cfg.Endpoint = "unix://" + filepath.Join(dir, "csi.sock")
	p, err := plugin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("unix", filepath.Join(dir, "csi.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := p.GRPCServer()
	go srv.Serve(lis)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			srv.Stop()
			p.Close()
		})
	}
	t.Cleanup(stop)
	return cfg.Endpoint, p, stop
}
