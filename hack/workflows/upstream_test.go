package workflows

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// upstreamRuns runs kind/upstream.sh with KIND_UPSTREAM_LIST=1 (it says
// what each run would run and stops before the cluster) in env, and
// returns the runs it names, its exit status and its output.
func upstreamRuns(t *testing.T, env map[string]string) (runs []string, status int, out string) {
	t.Helper()
	cmd := exec.Command("bash", "kind/upstream.sh")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "VERSION=test", "KIND_UPSTREAM_LIST=1", "KIND_UPSTREAM_RUNS=", "KIND_UPSTREAM_STRESS=")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^run (\S+): `).FindAllStringSubmatch(string(b), -1) {
		runs = append(runs, m[1])
	}
	return runs, status, string(b)
}

// TestKindUpstreamRuns: kind/upstream.sh picks its runs as its header
// says, in every environment a user or the kind job gives it. Until
// da2c7c6 the default list ended the script under set -e with no word,
// since every run by hand named its runs, and the kind job, which names
// none, would have failed on GitHub; an unknown run is refused before
// anything is deployed.
func TestKindUpstreamRuns(t *testing.T) {
	job := readKindJob(t)
	ran := false
	for _, s := range job.Steps {
		ran = ran || strings.Contains(s.Run, "make kind-upstream")
	}
	if !ran {
		t.Fatal("kind-e2e.yaml has no step running make kind-upstream; this test checks the runs it gets")
	}
	tests := []struct {
		name       string
		env        map[string]string
		wantRuns   []string
		wantStatus int
	}{
		{"the kind job's environment", job.Env, []string{"parallel", "serial"}, 0},
		{"defaults", nil, []string{"parallel", "serial"}, 0},
		{"stress", map[string]string{"KIND_UPSTREAM_STRESS": "1"}, []string{"parallel", "serial", "stress"}, 0},
		{"runs named", map[string]string{"KIND_UPSTREAM_RUNS": "stress serial"}, []string{"stress", "serial"}, 0},
		{"runs named win over stress", map[string]string{"KIND_UPSTREAM_RUNS": "parallel", "KIND_UPSTREAM_STRESS": "1"}, []string{"parallel"}, 0},
		{"an unknown run", map[string]string{"KIND_UPSTREAM_RUNS": "parallel features"}, nil, 2},
		{"a switch that is not 0 or 1", map[string]string{"KIND_UPSTREAM_STRESS": "true"}, nil, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs, status, out := upstreamRuns(t, tc.env)
			if status != tc.wantStatus || !slices.Equal(runs, tc.wantRuns) {
				t.Fatalf("runs %v, exit %d; want %v, exit %d; output:\n%s", runs, status, tc.wantRuns, tc.wantStatus, out)
			}
			if status != 0 && !strings.Contains(out, "unknown run features") && !strings.Contains(out, "KIND_UPSTREAM_STRESS=true: want 0 or 1") {
				t.Errorf("the refusal does not name what it refuses:\n%s", out)
			}
		})
	}
}
