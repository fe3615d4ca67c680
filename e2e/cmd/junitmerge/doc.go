// Command junitmerge merges the JUnit files of several bin/zonepath-e2e
// runs (make conformance runs the suite once per cluster) into one file
// that lists every spec once, where it ran, and prints a one-line summary.
// It fails when a spec was skipped in every run that selected it, ran in
// two runs, or failed: the merged file of a passing conformance run lists
// every spec as passed. The one accepted skip is the suite's version gate
// (junit.VersionGatePrefix: the cluster's Kubernetes is older than the
// spec needs), when every run selecting the spec skipped it so; such specs
// are counted apart and printed one a line.
//
//	go run ./e2e/cmd/junitmerge -o junit.xml junit-zonepath.xml junit-nocap.xml junit-cluster-2.xml
//
// A run is named after its file, junit-<run>.xml.
//
// It reads and writes JUnit files only; which specs a run selects is the
// Makefile's and the suite's business, not its.
package main
