//go:build zonepath_mutant_no_deletion_requeue

package snapshottopology

// A test-only build (see mutants.go): the plugin never retries a pod
// after a deletion of its snapshot or content.
func init() { requeueOnDeletion = false }
