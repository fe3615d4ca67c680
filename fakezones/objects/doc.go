// Package objects installs what a fake-zones cluster needs in its API:
// the snapshot CRDs, a CSIDriver per driver, StorageClasses and
// VolumeSnapshotClasses for each binding mode with and without
// allowedTopologies, the RBAC the scheduler plugin needs, and the kwok
// nodes themselves. It also builds the claims and snapshots that the
// cluster tests and make chaos's workload create.
//
// Everything it creates tolerates AlreadyExists, so it must not change
// objects that are there: a second install is a no-op.
package objects
