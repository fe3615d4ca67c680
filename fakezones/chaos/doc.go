// Package chaos is make chaos (zonepath-cluster chaos): snapshot → restore
// cycles on a fake-zones cluster of its own while its components are
// SIGKILLed one at a time, then an orphan audit of both ends.
//
// It owns the killer (Victims in a seeded Schedule, each restarted from its
// record in cluster.json), the workload lanes (zonal and region-wide
// restores, WaitForFirstConsumer and Immediate, the exhausted zone, lost
// replies through the driver's fault rules and admin edits between a lost
// reply and its retry), the reaper that watches every deletion, and the
// audit: Orphans, Missing, Stuck and OutsideTopology, pure functions over
// the driver's List calls and the API server's objects, and Failed over the
// cycles' outcomes. The report is a
// table component → kills, operations, orphans, stuck.
//
// It must not change what it tests: no component's code is touched; its
// only knobs are upstream flags (MaxBackoff), the driver's fault rules and
// the admin's edits. How a run goes and what each finding means:
// fakezones/README.md, "make chaos".
package chaos
