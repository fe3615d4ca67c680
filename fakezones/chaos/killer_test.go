package chaos

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zonepath/zonepath/fakezones/cluster"
	"github.com/zonepath/zonepath/fakezones/proc"
)

// The kill loop on stand-in processes: each kill ends a process and
// counts only once its successor is up (a new PID, recorded in the state
// file), a process that dies on its own is restarted and counted as an
// exit, not a kill, and everything runs when the loop returns.
func TestKillerKillsAndRevives(t *testing.T) {
	dir := t.TempDir()
	s := &cluster.State{WorkDir: dir}
	victims := []string{"provisioner", "snapshotter"}
	for _, name := range append([]string{"kwok"}, victims...) {
		p, err := proc.Start(proc.Spec{Name: name, Path: "/bin/sh", Args: []string{"-c", "sleep 60"}, Log: filepath.Join(dir, name+".log")})
		if err != nil {
			t.Fatal(err)
		}
		s.Processes = append(s.Processes, p)
	}
	t.Cleanup(func() { _ = cluster.Down(context.Background(), dir, io.Discard) })
	first := map[string]int{}
	for _, p := range s.Processes {
		first[p.Name] = p.PID
	}
	ledger := NewLedger()
	k := &killer{state: s, schedule: NewSchedule(victims, 3), every: 100 * time.Millisecond, ledger: ledger,
		log: io.Discard, started: map[string]time.Time{}}
	t0 := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error)
	go func() { done <- k.run(ctx) }()
	// Once the first kill is in, kwok (not a victim) dies on its own;
	// the run ends once it was revived and a second kill is in too.
	kwok, _ := s.Process("kwok")
	waitFor(t, func(s Snapshot) bool { return len(s.Kills) >= 1 }, ledger)
	_ = syscall.Kill(kwok.PID, syscall.SIGKILL)
	waitFor(t, func(s Snapshot) bool { return len(s.Kills) >= 2 && len(s.Exits) >= 1 }, ledger)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	snap := ledger.Snapshot()
	for _, kill := range snap.Kills {
		if !strings.HasPrefix(kill.Component, "provisioner") && !strings.HasPrefix(kill.Component, "snapshotter") {
			t.Errorf("killed %s, which is no victim", kill.Component)
		}
		if kill.Back < settleAlive {
			t.Errorf("%s counted back after %s, before it ran %s", kill.Component, kill.Back, settleAlive)
		}
	}
	if len(snap.Exits) != 1 || snap.Exits[0].Component != "kwok" {
		t.Fatalf("exits = %+v, want kwok's", snap.Exits)
	}
	read, err := cluster.ReadState(dir)
	if err != nil || read == nil {
		t.Fatalf("state file: %v", err)
	}
	for _, p := range read.Processes {
		if !p.Alive() {
			t.Errorf("%s does not run after the killer returned", p.Name)
		}
		if p.PID == first[p.Name] {
			t.Errorf("%s still has its first PID %d: never restarted", p.Name, p.PID)
		}
	}
	if !k.startedSince("kwok", t0) {
		t.Error("startedSince does not know of kwok's restart")
	}
}

// waitFor polls the ledger until cond holds; a minute is far more than
// the few seconds it takes.
func waitFor(t *testing.T, cond func(Snapshot) bool, l *Ledger) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(l.Snapshot()); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the killer never got there: %+v", l.Snapshot())
		}
	}
}

// After the kills, supervise still restarts what exits on its own (a
// sidecar whose controller the last kill restarted), and stops doing so
// once stopped.
func TestSuperviseRevivesAfterTheKills(t *testing.T) {
	s, p := standInCluster(t, "provisioner")
	ledger := NewLedger()
	k := &killer{state: s, ledger: ledger, log: io.Discard, started: map[string]time.Time{}}
	t0 := time.Now()
	stop := k.supervise(context.Background())
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	waitFor(t, func(s Snapshot) bool { return len(s.Exits) == 1 }, ledger)
	for deadline := time.Now().Add(time.Minute); !k.startedSince("provisioner", t0); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("supervise did not restart the provisioner")
		}
	}
	stop()
	q, _ := s.Process("provisioner")
	if q.PID == p.PID || !q.Alive() {
		t.Fatalf("the provisioner after supervise: pid %d (first %d), alive %v", q.PID, p.PID, q.Alive())
	}
	_ = syscall.Kill(q.PID, syscall.SIGKILL)
	time.Sleep(time.Second)
	if r, _ := s.Process("provisioner"); r.PID != q.PID {
		t.Errorf("supervise restarted the provisioner after it was stopped (pid %d → %d)", q.PID, r.PID)
	}
	if n := len(ledger.Snapshot().Exits); n != 1 {
		t.Errorf("exits = %d, want the one before stop", n)
	}
}

// A victim that ended on its own just before its turn (CI saw the
// provisioner exit after the controller it talks to was killed) is an
// exit, restarted, and then killed as scheduled: not the end of the run.
func TestKillerKillsAVictimThatJustExited(t *testing.T) {
	s, p := standInCluster(t, "provisioner")
	if err := p.Kill(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ledger := NewLedger()
	k := &killer{state: s, schedule: NewSchedule([]string{"provisioner"}, 1), every: time.Hour, ledger: ledger,
		log: io.Discard, started: map[string]time.Time{}}
	kill, err := k.kill(context.Background(), "provisioner")
	if err != nil {
		t.Fatalf("a victim that had exited ended the run: %v", err)
	}
	if snap := ledger.Snapshot(); len(snap.Exits) != 1 || snap.Exits[0].Component != "provisioner" {
		t.Errorf("exits = %+v, want the provisioner's own exit", snap.Exits)
	}
	q, _ := s.Process("provisioner")
	if kill.Component != "provisioner" || q.PID == p.PID || !q.Alive() {
		t.Errorf("kill = %+v; provisioner pid %d (first %d), alive %v", kill, q.PID, p.PID, q.Alive())
	}
}

// standInCluster is a cluster state of one stand-in process named name
// (a shell sleeping a minute), brought down when the test ends.
func standInCluster(t *testing.T, name string) (*cluster.State, *proc.Process) {
	t.Helper()
	dir := t.TempDir()
	p, err := proc.Start(proc.Spec{Name: name, Path: "/bin/sh", Args: []string{"-c", "sleep 60"}, Log: filepath.Join(dir, name+".log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Down(context.Background(), dir, io.Discard) })
	return &cluster.State{WorkDir: dir, Processes: []*proc.Process{p}}, p
}
