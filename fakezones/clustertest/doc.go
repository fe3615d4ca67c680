// Package clustertest is the cluster-side test kit: it starts fake-zones
// clusters from the binaries in bin/ for tests that need a real API
// server, builds the API objects those tests create (claims, snapshots,
// classes) and waits for them the way the cluster tests need. Every
// cluster is stopped when its test ends, and the test fails if any process
// of it is left behind.
//
// A new cluster test starts in three lines:
//
//	c := clustertest.Start(t, spec.File{Zones: 2, NodesPerZone: 1}, "")
//	pv := c.Provision(t, "zonepath-zone-a", "")
//	c.Snapshot(t, pv.Spec.ClaimRef.Name) // its VolumeSnapshotContent, once ReadyToUse
//
// Such tests carry the build tag livecluster, so go test ./... without it
// never starts processes. The kit must not be imported by non-test code,
// nor by the e2e suite, which runs against any cluster.
package clustertest
