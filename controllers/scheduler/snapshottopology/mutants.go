package snapshottopology

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Test-only mutations, for the e2e suite's mutants (e2e/cmd/mutants, make
// e2e-mutants): each breaks one rule the suite checks, to prove that the
// scenarios which check it can fail. Nothing a user can set turns them
// on: only a build with the tag that names one (the files mutant_*.go,
// built by the Makefile into bin/mutants/, never into bin/), so the
// zonepath-scheduler of make build and of deploy/ always has both false.
var (
	// requeueOnDeletion (default true; false with the build tag
	// zonepath_mutant_no_deletion_requeue) retries a pod when a snapshot
	// or content it restores from is deleted. Off, the pod keeps the
	// reason it was given before the deletion (scenarios 7a/7b catch it).
	requeueOnDeletion = true
	// rejectFirstAttemptOnly (build tag zonepath_mutant_reject_first_only)
	// makes the plugin filter a pod's first scheduling attempt only and
	// skip every later one, so a pod it rejected is placed anywhere once
	// retried (scenarios 3, 10 and 13 catch it).
	rejectFirstAttemptOnly = false
)

// attempts counts, for rejectFirstAttemptOnly, the pods whose first
// attempt the plugin has filtered.
var attempts sync.Map // types.UID → struct{}

// retried says whether rejectFirstAttemptOnly lets this attempt of pod
// pass unfiltered: it is not its first.
func retried(pod *v1.Pod) bool {
	if !rejectFirstAttemptOnly {
		return false
	}
	_, seen := attempts.LoadOrStore(types.UID(pod.UID), struct{}{})
	return seen
}
