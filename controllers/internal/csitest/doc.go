// Package csitest holds what the controllers' tests share on the CSI
// side: a fake plugin's identity service, a recorder of one RPC's calls
// with queued answers, and a client interceptor that acts when a reply is
// lost.
//
// It is for tests only: no production package may import it, and it must
// not hold a package's own fake behaviour (what a fake answers beyond
// identity stays beside that package's tests).
package csitest
