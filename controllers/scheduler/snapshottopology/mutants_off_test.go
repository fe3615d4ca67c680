//go:build !zonepath_mutant_no_deletion_requeue && !zonepath_mutant_reject_first_only

package snapshottopology

import "testing"

// Without their build tags the test-only mutations are off: make build's
// zonepath-scheduler is never a mutant.
func TestMutationsOffByDefault(t *testing.T) {
	if !requeueOnDeletion || rejectFirstAttemptOnly {
		t.Fatalf("requeueOnDeletion %v, rejectFirstAttemptOnly %v: a build without mutant tags must have true, false", requeueOnDeletion, rejectFirstAttemptOnly)
	}
}
