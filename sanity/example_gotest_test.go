package sanity_test

import (
	"os"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"github.com/onsi/ginkgo/v2"

	zpsanity "github.com/zonepath/zonepath/sanity"
)

// testMyDriver is what a vendor's TestSanity(t *testing.T) holds, in the
// driver's own repository, with the driver listening on endpoint.
// Importing zpsanity registers the extension tests, so sanity.Test runs
// them beside csi-sanity's own; focus on them alone with
// -ginkgo.focus='\[zonepath\]' or -ginkgo.label-filter=snapshot-topology.
func testMyDriver(t *testing.T, endpoint string) {
	if err := zpsanity.SetConfig(zpsanity.Config{
		Segments: []map[string]string{
			{"topology.kubernetes.io/zone": "a"},
			{"topology.kubernetes.io/zone": "b"},
		},
	}); err != nil {
		t.Fatal(err)
	}
	ginkgo.ReportAfterSuite("zonepath-sanity summary", zpsanity.PrintSummary(os.Stdout))

	cfg := sanity.NewTestConfig()
	cfg.Address = endpoint
	cfg.TargetPath = t.TempDir() + "/target"
	cfg.StagingPath = t.TempDir() + "/staging"
	sanity.Test(t, cfg)
}

// Run the upstream suite and the extensions inside your own go test. This
// example only compiles: it needs your driver on a socket.
func Example_goTest() {
	// func TestSanity(t *testing.T) {
	// 	testMyDriver(t, "unix:///run/my-driver/csi.sock")
	// }
	_ = testMyDriver
}
