// Package e2e is zonepath's conformance suite for KEP-5943 (snapshot
// topology) and KEP-5030 (attach limits): a Ginkgo v2 suite on the
// upstream e2e framework, built as bin/zonepath-e2e with go test -c the
// way upstream builds e2e.test, and run against any cluster and CSI
// driver. It tests behaviour only through the Kubernetes API.
//
// The driver is described by upstream's external-storage driver file
// (-storage.testdriver, loaded by k8s.io/kubernetes/test/e2e/storage/external)
// and by zonepath's strictly parsed extension file (-zonepath.driver-ext,
// package driverext). See README.md.
//
// It must not import this module's packages beyond e2e/... and internal/:
// it tests a driver from outside, through the API and its own files.
package e2e
