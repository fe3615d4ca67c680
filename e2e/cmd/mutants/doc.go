// Command mutants proves that the e2e suite can fail (make e2e-mutants): it
// runs bin/zonepath-e2e against broken fake-zones set-ups, one at a time,
// and fails unless every mutant is caught by the scenarios expected to
// catch it. It prints a table of mutant → scenarios failed, and its run
// time.
//
// Each mutant breaks the set-up from outside the code under test (the
// cluster file, the driver's fault rules, a component swapped for its
// upstream original): never a patch to zonepath's code.
package main
