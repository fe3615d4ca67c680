// Package state keeps the driver's volumes, snapshots, publications and
// node mounts durably in a bbolt database, with an in-memory mirror that
// serves every read without I/O.
//
// Writes are group-committed: each Update runs its logic against the
// in-memory view under a short lock (never held across I/O), queues its
// records, and waits until a single bbolt transaction holding every write
// queued meanwhile is synced to disk. The first writer never waits for a
// timer, so a lone client pays one commit, and concurrent clients share
// one. Readers only see records whose commit has completed, so nothing a
// reader observes can vanish in a crash.
//
// Errors returned by the store already carry gRPC status codes.
//
// It knows records, not CSI: it must not import the CSI spec or the
// plugin, and it decides nothing about placement or quotas (the plugin
// does, inside Update); its only judgement is what is durable.
package state
