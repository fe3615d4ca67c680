package proc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

func start(t *testing.T, script string) *Process {
	t.Helper()
	p, err := Start(Spec{Name: "test", Path: "/bin/sh", Args: []string{"-c", script}, Log: filepath.Join(t.TempDir(), "logs", "test.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background(), time.Second) })
	return p
}

// Stop must take the whole process group down: components start children
// of their own, and down must leave none.
func TestStopEndsTheGroup(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "child.pid")
	p := start(t, "sleep 60 & echo $! > "+child+"; wait")
	pid := childPID(t, child)
	if !p.Alive() {
		t.Fatal("the process is not alive after start")
	}
	if err := p.Stop(context.Background(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Fatal("the process survived Stop")
	}
	childProc := &Process{Name: "child", PID: pid}
	childProc.StartTime, _ = startTime(pid)
	if err := poll(3*time.Second, func() bool { return gone(childProc.PID) }); err != nil {
		t.Fatalf("the child %d survived its group's Stop", pid)
	}
	if err := p.Stop(context.Background(), time.Second); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}

// childPID waits for the PID a test process writes to path for the child
// it started.
func childPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	if err := poll(5*time.Second, func() bool {
		data, _ := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return pid != 0
	}); err != nil {
		t.Fatalf("the child never started: %v", err)
	}
	return pid
}

// poll checks done every 10ms until it holds or timeout passes.
func poll(timeout time.Duration, done func() bool) error {
	return wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return done(), nil })
}

// gone says whether pid has exited (or is a zombie nobody reaps).
func gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return err != nil || zombie(pid)
}

// A process that ignores SIGTERM is killed after the grace period.
func TestStopKillsAfterGrace(t *testing.T) {
	// SIGTERM before the trap is in would end the shell at once: wait
	// until it says the trap is in, however slow the machine.
	ready := filepath.Join(t.TempDir(), "ready")
	p := start(t, "trap '' TERM; : > "+ready+"; while :; do sleep 0.05; done")
	if err := poll(10*time.Second, func() bool { _, err := os.Stat(ready); return err == nil }); err != nil {
		t.Fatalf("the shell never installed its trap: %v", err)
	}
	t0 := time.Now()
	if err := p.Stop(context.Background(), 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if p.Alive() {
		t.Fatal("a process ignoring SIGTERM survived Stop")
	}
	if d := time.Since(t0); d < 300*time.Millisecond {
		t.Fatalf("Stop returned after %v, before the grace period", d)
	}
}

// A recorded PID now used by another process is not that process.
func TestAliveChecksStartTime(t *testing.T) {
	p := start(t, "sleep 60")
	other := &Process{Name: "recorded", PID: p.PID, StartTime: p.StartTime + 1}
	if other.Alive() {
		t.Fatal("a PID with another start time counts as alive: down would signal a stranger")
	}
	if err := other.Stop(context.Background(), time.Second); err != nil || !p.Alive() {
		t.Fatalf("Stop of a stale record signalled the live process (err %v)", err)
	}
}

func TestExitErrorShowsTheLog(t *testing.T) {
	p := start(t, "echo first; echo 'listen: address in use'; exit 3")
	select {
	case <-p.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the process did not exit")
	}
	msg := p.ExitError().Error()
	if !strings.Contains(msg, "exit status 3") || !strings.Contains(msg, "listen: address in use") {
		t.Fatalf("ExitError = %q, want the status and the log's last lines", msg)
	}
	if p.Alive() {
		t.Fatal("an exited process is alive")
	}
}

func TestStartFailsClearly(t *testing.T) {
	_, err := Start(Spec{Name: "ghost", Path: "/nonexistent/ghost", Log: filepath.Join(t.TempDir(), "ghost.log")})
	if err == nil || !strings.Contains(err.Error(), "ghost: starting /nonexistent/ghost") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseHWM(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         int64
		wantErr      string
	}{
		{name: "kB", status: "Name:\tetcd\nVmPeak:\t  999 kB\nVmHWM:\t   2048 kB\nVmRSS:\t 1024 kB\n", want: 2 << 20},
		{name: "missing", status: "Name:\tzombie\nState:\tZ\n", wantErr: "no VmHWM"},
		{name: "other unit", status: "VmHWM:\t2 MB\n", wantErr: `VmHWM "2 MB" is not in kB`},
		{name: "not a number", status: "VmHWM:\tlots kB\n", wantErr: "VmHWM: strconv.ParseInt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHWM([]byte(tc.status))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseHWM = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestPeakRSSOfThisProcess(t *testing.T) {
	got, err := (&Process{PID: os.Getpid()}).PeakRSS()
	if err != nil || got < 1<<20 {
		t.Fatalf("PeakRSS = %d, %v; want at least 1 MiB", got, err)
	}
}

// Kill ends a process that ignores SIGTERM at once, with everything it
// started, and a process read back from the state file can be started
// again from what it recorded.
func TestKillThenStartAgainFromTheRecord(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "child.pid")
	p, err := Start(Spec{Name: "test", Path: "/bin/sh", Env: []string{"CHAOS_MARK=1"},
		Args: []string{"-c", "trap '' TERM; sleep 60 & echo $! > " + child + "; echo mark=$CHAOS_MARK; wait"},
		Log:  filepath.Join(dir, "test.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background(), time.Second) })
	pid := childPID(t, child)
	t0 := time.Now()
	if err := p.Kill(context.Background(), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second || p.Alive() {
		t.Fatalf("Kill took %v (alive after: %v): SIGKILL must not wait for a grace period", d, p.Alive())
	}
	if err := poll(3*time.Second, func() bool { return gone(pid) }); err != nil {
		t.Fatalf("the child %d survived its group's SIGKILL", pid)
	}
	if err := p.Kill(context.Background(), time.Second); err == nil {
		t.Fatal("Kill of a dead process reported success: a kill must be counted only when it killed something")
	}

	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var recorded Process
	if err := json.Unmarshal(data, &recorded); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(child)
	again, err := Start(recorded.Spec())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = again.Stop(context.Background(), time.Second) })
	if err := poll(5*time.Second, func() bool { _, err := os.Stat(child); return err == nil }); err != nil || !again.Alive() {
		t.Fatalf("the process started from its record did not run (alive %v, err %v)", again.Alive(), err)
	}
	// The script writes the child's pid before its mark line: wait for the
	// line rather than read the log once.
	marks := func() bool { return strings.Count(Tail(p.Log, 10), "mark=1") == 2 }
	if err := poll(5*time.Second, marks); err != nil {
		t.Fatalf("the log has %d lines mark=1, want 2 (the record keeps the environment and the log):\n%s",
			strings.Count(Tail(p.Log, 10), "mark=1"), Tail(p.Log, 10))
	}
}
