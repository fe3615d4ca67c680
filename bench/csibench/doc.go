// Package csibench is make bench's driver benchmark over the CSI socket.
// Run starts zonepath and the null driver (bench/nulldriver: the same
// RPCs answered from memory, what gRPC and the socket cost here) as
// processes, fills zonepath with N volumes and N snapshots, and times
// CreateVolume, DeleteVolume, CreateSnapshot, DeleteSnapshot and complete
// paged ListVolumes and ListSnapshots at each N and concurrency, through
// one client connection per driver shared by every caller, as a CO
// calls. The two drivers are timed in alternating rounds, so that a
// change of load on the machine touches both. It prints the table and
// checks the targets (report.go).
//
// It owns the measuring and the verdict. It must time the drivers as a
// CO sees them, binaries over their sockets, never in-process. Its
// command is bench/cmd/csibench; targets and figures: bench/README.md.
package csibench
