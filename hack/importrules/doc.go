// Package importrules holds which top-level folders of this module may
// import which, and checks a source tree against them. Its test runs the
// check on the repository in make test, so a new import across a boundary
// fails there with the file and the rule it breaks.
//
// It reads import lines only (go/parser), never builds: the check takes
// milliseconds and sees files behind build tags too. It must not import
// anything of this module: it judges the others.
package importrules
