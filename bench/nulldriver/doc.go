// Package nulldriver is the baseline of make bench: a CSI controller that
// answers from memory with responses computed at start, so that timing it
// over its unix socket measures what gRPC, the socket and the client cost
// on this machine and nothing else. Its volumes and snapshots have the
// shapes zonepath's have with the default world (IDs, sizes, one
// {region, zone} segment each, a published-nodes status on volumes) and
// it pages them the same way (next_token "zp1:" and the next entry's ID),
// so the two listings carry the same bytes.
//
// It owns those precomputed responses and serving them. It must not grow
// into a driver: creates always return the same object and deletes do
// nothing, so the listed set never changes. Its binary is
// bench/cmd/nulldriver; bench/README.md says how make bench uses it.
package nulldriver
