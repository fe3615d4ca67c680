// Package gobuild builds a command of this module for a test that runs it
// as a process, with the flags the test binary itself was built with, so
// that go build takes the compiled packages from the cache the test's own
// build filled. A race-enabled test (go test -race, as make test RACE=1 runs)
// that built its command without -race compiled most of the dependency
// tree a second time: on a cold cache, minutes of make test. The command
// then also runs with the race detector, as the test does. Tests of any
// folder may import it, non-test code must not.
package gobuild

import (
	"fmt"
	"os/exec"
)

// Args are go build's arguments for building pkg (run in dir) into out:
// -race when the calling test binary was built with it.
func Args(out, pkg string) []string {
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	return append(args, "-o", out, pkg)
}

// Build runs go build with Args in dir ("" for the current directory).
func Build(dir, out, pkg string) error {
	cmd := exec.Command("go", Args(out, pkg)...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", Args(out, pkg), err, b)
	}
	return nil
}
