// Package faults injects declarative, deterministic faults into the
// driver's gRPC server.
//
// Conformance tests are only worth something if they can fail. To prove
// that a test really checks a CSI rule, the driver is started with a
// fault file that makes it break exactly that rule (drop a response
// field, return RESOURCE_EXHAUSTED for one zone, lose a reply, ...) and
// the test is expected to fail. The rules are therefore deterministic:
// they match on the RPC, topology segment and object names, fire in an
// exact window of matching calls counted under a mutex, and never use
// randomness.
//
// The file is YAML (see README.md in this directory for the format). It is
// validated completely at load time so that a typo fails loudly instead of
// silently injecting nothing, and it can be reloaded (Reload or Watch)
// without restarting the driver; a bad file never replaces good rules.
// An injector may read several files (NewFiles), each reloaded on its own,
// so that a tool's rules (outages) can change without restarting the
// counters of the user's.
//
// Counting: every rule counts each call that matches its match block,
// independently of the other rules, and the first rule in file order (the
// files in the order given) whose count is inside its nth/count window
// acts on the call. Later
// rules still count the call even if an earlier rule acted.
//
// It knows gRPC methods and CSI messages only: it must not import the
// plugin or its state, so that a fault cannot depend on driver internals.
package faults
