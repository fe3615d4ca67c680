// Package idempotency is the one table of what CreateSnapshot and
// CreateVolume answer when a name is reused with other topology
// requirements, and when a requisite names no topology of the driver (a
// misspelt zone), each case with the CSI v1.13 clause behind its answer.
//
// Two runners read it, so that the driver and the conformance suite cannot
// drift apart again: the driver's test (driver/plugin) runs every case
// against zonepath and expects Want, and zonepath-sanity (sanity) runs
// every case against any driver and accepts Want or, where the spec leaves
// the driver a defensible choice, one of Also, saying which it saw. Cases
// name places by role (A, B, C, X), and each runner maps them onto
// segments of its driver: zonepath's zones, or the segments a vendor
// configures.
//
// The package holds data and the spec's words only: no driver, no Ginkgo,
// so both sides may import it (hack/importrules: driver/ and sanity/ import
// internal/ only).
package idempotency
