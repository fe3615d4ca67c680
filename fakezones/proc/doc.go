// Package proc starts the fake-zones cluster's components as detached
// child processes, each in its own process group with its own log file,
// and stops them again, so that the cluster outlives the command that
// started it and "down" - from any later command - leaves nothing behind.
//
// A process is identified by its PID and its start time (field 22 of
// /proc/PID/stat): a PID alone could have been reused by an unrelated
// process since the cluster was started, and down must never signal that.
// It also records its path, arguments and environment (Spec), so that a
// later command can start it again after Kill, as a chaos run does.
//
// It must not know what a component is: the order and the readiness checks
// are package cluster's.
package proc
