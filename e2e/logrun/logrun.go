// Package logrun runs a built binary of the harness (zonepath-cluster,
// the suites) with its output in a log file, for the commands that drive
// them (e2e/cmd/mutants, e2e/cmd/matrix).
package logrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Run runs the binary at path with args, stdout and stderr into the file
// log, and returns an error naming the binary and its exit code when it
// fails. When ctx ends the binary gets SIGINT, not SIGKILL, so that
// zonepath-cluster up stops what it started and a suite writes its JUnit
// file; after a minute more it is killed.
func Run(ctx context.Context, log, path string, args ...string) error {
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = time.Minute
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%s exited %d", filepath.Base(path), exit.ExitCode())
	}
	return err
}
