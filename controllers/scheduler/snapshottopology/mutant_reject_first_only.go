//go:build zonepath_mutant_reject_first_only

package snapshottopology

// A test-only build (see mutants.go): the plugin filters only a pod's
// first scheduling attempt.
func init() { rejectFirstAttemptOnly = true }
