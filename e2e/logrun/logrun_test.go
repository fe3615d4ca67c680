package logrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "out.log")
	if err := Run(context.Background(), log, "/bin/sh", "-c", "echo out; echo err >&2"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(log); string(data) != "out\nerr\n" {
		t.Errorf("log = %q, want both streams", data)
	}
	if err := Run(context.Background(), log, "/bin/sh", "-c", "exit 3"); err == nil || err.Error() != "sh exited 3" {
		t.Errorf("exit 3: err = %v, want \"sh exited 3\"", err)
	}
	if err := Run(context.Background(), filepath.Join(dir, "no", "such", "dir.log"), "/bin/true"); err == nil {
		t.Error("a log that cannot be created: no error")
	}
}

// A cancelled run gets SIGINT, which a well-behaved binary traps to clean
// up: the trap's output must reach the log.
func TestRunInterrupts(t *testing.T) {
	log := filepath.Join(t.TempDir(), "out.log")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := Run(ctx, log, "/bin/sh", "-c", `trap 'echo interrupted; exit 130' INT; echo started; while :; do sleep 0.05; done`)
	if err == nil || !strings.Contains(err.Error(), "exited 130") {
		t.Errorf("err = %v, want the trap's exit 130", err)
	}
	if data, _ := os.ReadFile(log); !strings.Contains(string(data), "interrupted") {
		t.Errorf("log = %q: the binary got no SIGINT", data)
	}
}
