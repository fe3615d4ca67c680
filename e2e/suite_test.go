package e2e

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/kubernetes/test/e2e/framework"
	e2eskipper "k8s.io/kubernetes/test/e2e/framework/skipper"
	storageframework "k8s.io/kubernetes/test/e2e/storage/framework"
	admissionapi "k8s.io/pod-security-admission/api"

	"github.com/zonepath/zonepath/e2e/driverext"
)

// Labels for --ginkgo.label-filter, one per area of the issue.
const (
	labelSnapshotTopology = "snapshot-topology"
	labelTopology         = "topology"
	labelGateOff          = "feature-gate-off"
	labelAttachLimits     = "attach-limits"
	labelStorageCapacity  = "storage-capacity"
	labelSlow             = "slow"
	// labelCapabilityOff: specs for a driver without
	// SNAPSHOT_ACCESSIBILITY_CONSTRAINTS (extension file snapshotTopology:
	// false), run on their own with that driver's files.
	labelCapabilityOff = "capability-off"
	// labelKubelet: specs whose pods really run, so they need nodes with
	// kubelets; fake zones' kwok nodes only pretend to run pods.
	labelKubelet = "kubelet"
)

var (
	// ext is the extension file, nil without -zonepath.driver-ext.
	ext *driverext.File
	// extErr is why ext does not fit the driver, found in DefineTests.
	extErr error
	// defined counts DefineTests calls: zero means the driver file let
	// upstream skip our suite's registration (no dynamic provisioning).
	defined int
	// extDriver is the driver ext describes, for the setup's check of its
	// segments against the cluster's nodes (checkExtSegments).
	extDriver *storageframework.DriverInfo
)

// zonepathSuite is the storageframework.TestSuite that carries zonepath's
// specs into upstream's external-storage driver loader.
type zonepathSuite struct {
	info storageframework.TestSuiteInfo
}

func initZonepathSuite() storageframework.TestSuite {
	return &zonepathSuite{info: storageframework.TestSuiteInfo{
		Name: "zonepath",
		// One pattern: the specs make their own StorageClasses from the
		// driver's, with the binding modes and allowedTopologies they need.
		TestPatterns: []storageframework.TestPattern{storageframework.DefaultFsDynamicPV},
	}}
}

func (s *zonepathSuite) GetTestSuiteInfo() storageframework.TestSuiteInfo { return s.info }

// SkipUnsupportedTests skips nothing: every spec says itself what it
// lacks (e2eskipper.Skipf), where a skipped registration would be silent.
func (s *zonepathSuite) SkipUnsupportedTests(storageframework.TestDriver, storageframework.TestPattern) string {
	return ""
}

func (s *zonepathSuite) DefineTests(driver storageframework.TestDriver, pattern storageframework.TestPattern) {
	defined++
	if ext != nil {
		extDriver = driver.GetDriverInfo()
		if err := ext.Validate(driver.GetDriverInfo().TopologyKeys); err != nil {
			extErr = fmt.Errorf("driver %s: %w", driver.GetDriverInfo().Name, err)
		}
	}
	// The driver file's Timeouts (ClaimProvision, PodStart, ...) bound
	// every wait.
	f := framework.NewFrameworkWithCustomTimeouts("zonepath", storageframework.GetDriverTimeouts(driver))
	// kwok and real nodes alike; the pods only hold volumes.
	f.NamespacePodSecurityLevel = admissionapi.LevelPrivileged

	e := &env{f: f, driver: driver}
	ginkgo.BeforeEach(func(ctx ginkgo.SpecContext) {
		if ext == nil {
			e2eskipper.Skipf("no -zonepath.driver-ext file: the segments and capabilities the specs need are not declared")
		}
		e.ext = ext
		e.cfg = driver.PrepareTest(ctx, f)
	})
	// Before the framework's AfterEach deletes the namespace.
	ginkgo.JustAfterEach(e.diagnose)
	defineSnapshotTopology(e)
	defineTopology(e)
	defineGateOff(e)
	defineAttachLimits(e)
	defineStorageCapacity(e)
	defineLifecycle(e)
	defineData(e)
	defineGroupSnapshot(e)
	defineZoneOutage(e)
	defineSharedAccess(e)
}
