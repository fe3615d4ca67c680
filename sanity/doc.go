// Package sanity extends csi-sanity (github.com/kubernetes-csi/csi-test/v5/pkg/sanity)
// with the rules CSI v1.13 adds for snapshot topology, RESOURCE_EXHAUSTED
// and attach limits. Its tests register through sanity.DescribeSanity, so
// blank-importing this package into a Ginkgo suite that calls
// sanity.GinkgoTest runs them beside the upstream suite; bin/zonepath-sanity
// does exactly that from the command line.
//
// Every test names the clause of the CSI spec it checks. A test that needs
// an optional capability the driver does not advertise is skipped with a
// message saying so: a correct driver without the feature never fails.
//
// Vendors import this package, so it must not import zonepath's driver
// (driver/...): only csi-test, the CSI spec and this module's internal/.
// Files by area: snapshots.go, restore.go, topologykeys.go and
// attachlimit.go hold the tests; idempotency.go runs the cases of
// internal/idempotency, the table of name reuse and unknown topology that
// zonepath's own driver test runs too; suite.go what they share; driver.go asks
// the driver what it advertises; segments.go compares topology segments;
// config.go and summary.go are the vendor-facing API.
package sanity
