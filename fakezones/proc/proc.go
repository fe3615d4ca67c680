package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Spec says what to run.
type Spec struct {
	Name string
	Path string
	Args []string
	// Env is added to the environment of this process.
	Env []string
	// Log is the file that gets stdout and stderr, appended to.
	Log string
}

// Process is a started process, as recorded in the cluster's state file.
// It records how it was started too (Path, Args, Env), so that a later
// command can start it again after killing it (Spec).
type Process struct {
	Name      string   `json:"name"`
	PID       int      `json:"pid"`
	StartTime uint64   `json:"startTime"`
	Log       string   `json:"log"`
	Path      string   `json:"path"`
	Args      []string `json:"args,omitempty"`
	Env       []string `json:"env,omitempty"`
	// exited is closed when the process ends, for the process that
	// started it; nil after reading the state file.
	exited chan struct{}
	err    error
}

// Start runs spec detached: a new process group, stdin from /dev/null,
// output to spec.Log. The caller's context does not bound the process.
func Start(spec Spec) (*Process, error) {
	if err := os.MkdirAll(filepath.Dir(spec.Log), 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(spec.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: opening its log: %w", spec.Name, err)
	}
	defer log.Close()
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: starting %s: %w", spec.Name, spec.Path, err)
	}
	p := &Process{Name: spec.Name, PID: cmd.Process.Pid, Log: spec.Log,
		Path: spec.Path, Args: spec.Args, Env: spec.Env, exited: make(chan struct{})}
	p.StartTime, _ = startTime(p.PID)
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Spec is what started the process, to start it again.
func (p *Process) Spec() Spec {
	return Spec{Name: p.Name, Path: p.Path, Args: p.Args, Env: p.Env, Log: p.Log}
}

// Exited is closed when a process this command started has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitError says how a process this command started ended, with the tail
// of its log, so a failed start explains itself.
func (p *Process) ExitError() error {
	return fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.Name, p.err, p.Log, Tail(p.Log, 15))
}

// Alive reports whether the process is still the one that was started.
func (p *Process) Alive() bool {
	st, err := startTime(p.PID)
	return err == nil && (p.StartTime == 0 || st == p.StartTime) && !zombie(p.PID)
}

// Stop sends SIGTERM to the process group, waits up to grace for the
// process to end, then sends SIGKILL to the group. It is a no-op for a
// process that is already gone.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	_ = syscall.Kill(-p.PID, syscall.SIGTERM)
	if p.wait(ctx, grace) {
		killGroup(p.PID)
		return nil
	}
	killGroup(p.PID)
	if !p.wait(ctx, 5*time.Second) {
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.Name, p.PID)
	}
	return nil
}

// ErrNotRunning is Kill's answer for a process that had already ended:
// nothing was killed, and a caller counting kills must not count it.
var ErrNotRunning = errors.New("is not running")

// Kill sends SIGKILL to the process group at once, as a crash or an OOM
// kill would end it, and waits up to timeout until the process is gone.
// An error means it still runs: a kill is only a kill once it is dead.
func (p *Process) Kill(ctx context.Context, timeout time.Duration) error {
	if !p.Alive() {
		return fmt.Errorf("%s (pid %d): %w", p.Name, p.PID, ErrNotRunning)
	}
	killGroup(p.PID)
	if !p.wait(ctx, timeout) {
		return fmt.Errorf("%s (pid %d) survived SIGKILL for %s", p.Name, p.PID, timeout)
	}
	return nil
}

// killGroup makes sure nothing the process started outlives it.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// wait says whether the process is gone within d. It is a hand-written
// poll, not wait.PollUntilContextTimeout, because a child of this process
// also wakes it the moment it exits (exitedOrNever).
func (p *Process) wait(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !p.Alive() {
			return true
		}
		select {
		case <-ctx.Done():
			return !p.Alive()
		case <-p.exitedOrNever():
		case <-time.After(20 * time.Millisecond):
		}
	}
	return !p.Alive()
}

func (p *Process) exitedOrNever() <-chan struct{} {
	if p.exited == nil {
		return nil
	}
	return p.exited
}

// startTime is the process's start time in clock ticks since boot.
func startTime(pid int) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name in field 2 may hold spaces; fields after it are
	// counted from its closing parenthesis.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("pid %d: malformed stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("pid %d: short stat", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

func zombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && len(data) > i+2 && data[i+2] == 'Z'
}

// Tail returns the last n lines of a file, for error messages.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// PeakRSS is the most resident memory the process has had, in bytes
// (VmHWM in /proc/<pid>/status): what a machine must have for it, unlike
// the current RSS, which a measurement taken after a start's burst
// underrates.
func (p *Process) PeakRSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID))
	if err != nil {
		return 0, err
	}
	return parseHWM(data)
}

// parseHWM finds VmHWM ("VmHWM:   123456 kB") in a status file.
func parseHWM(status []byte) (int64, error) {
	for line := range strings.Lines(string(status)) {
		rest, ok := strings.CutPrefix(line, "VmHWM:")
		if !ok {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(rest), " kB")
		if !ok {
			return 0, fmt.Errorf("VmHWM %q is not in kB", strings.TrimSpace(rest))
		}
		n, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM: %w", err)
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("no VmHWM in status (a kernel thread or a zombie)")
}
