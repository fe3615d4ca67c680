package cluster

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/fakezones/proc"
)

// A killed component comes back from its record, in its place in the
// stop order, and the state file says so; a live one is never started
// twice.
func TestKillAndRespawn(t *testing.T) {
	dir := t.TempDir()
	s := &State{WorkDir: dir}
	for _, name := range []string{"etcd", "kube-apiserver", "snapshot-controller"} {
		p, err := proc.Start(proc.Spec{Name: name, Path: "/bin/sh", Args: []string{"-c", "sleep 60"}, Log: filepath.Join(dir, "logs", name+".log")})
		if err != nil {
			t.Fatal(err)
		}
		s.Processes = append(s.Processes, p)
	}
	t.Cleanup(func() { _ = s.stop(context.Background(), &strings.Builder{}) })
	if _, err := s.Respawn("kube-apiserver"); err == nil || !strings.Contains(err.Error(), "still runs") {
		t.Fatalf("Respawn of a running component: err = %v, want a refusal", err)
	}
	old, _ := s.Process("kube-apiserver")
	if err := s.Kill(context.Background(), "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	if old.Alive() {
		t.Fatal("Kill returned while the component ran")
	}
	p, err := s.Respawn("kube-apiserver")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Alive() || p.PID == old.PID {
		t.Fatalf("respawned pid %d (old %d), alive %v", p.PID, old.PID, p.Alive())
	}
	read, err := ReadState(dir)
	if err != nil || read == nil {
		t.Fatalf("state file: %v", err)
	}
	names := make([]string, len(read.Processes))
	for i, rp := range read.Processes {
		names[i] = rp.Name
	}
	if !slices.Equal(names, []string{"etcd", "kube-apiserver", "snapshot-controller"}) || read.Processes[1].PID != p.PID {
		t.Fatalf("state file lists %v, kube-apiserver pid %d; want the new pid %d in the old place", names, read.Processes[1].PID, p.PID)
	}
	if _, err := s.Process("kwok"); err == nil {
		t.Fatal("Process of a component the cluster lacks succeeded")
	}
	if err := s.Kill(context.Background(), "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
}
