// Package junit reads the JUnit files Ginkgo writes for bin/zonepath-e2e
// and bin/zonepath-sanity, and says what became of each test case, the
// way Ginkgo's JUnit reporter encodes it. The tools that judge those runs
// (e2e/cmd/junitmerge, e2e/cmd/mutants, e2e/cmd/matrix) share it, so that all of
// them count a spec alike. It also holds the one skip reason the suite
// writes for tools to read: VersionGatePrefix, for specs the cluster's
// Kubernetes is too old for.
package junit
