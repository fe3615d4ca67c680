package workflows

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	"sigs.k8s.io/yaml"
)

const root = "../.."

// kindJob is the part of kind-e2e.yaml these tests read.
type kindJob struct {
	Env   map[string]string `json:"env"`
	Steps []struct {
		Run string `json:"run"`
	} `json:"steps"`
	Strategy struct {
		Matrix struct {
			Include []struct {
				Kubernetes string `json:"kubernetes"`
				NodeImage  string `json:"node-image"`
				Components string `json:"components"`
			} `json:"include"`
		} `json:"matrix"`
	} `json:"strategy"`
}

func readKindJob(t *testing.T) kindJob {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".github/workflows/kind-e2e.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]kindJob `json:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	job, ok := wf.Jobs["kind-e2e"]
	if !ok || len(job.Strategy.Matrix.Include) == 0 {
		t.Fatal("kind-e2e.yaml: no job kind-e2e with a matrix")
	}
	return job
}

// TestKindNodeImages: every job's node image is of its own Kubernetes
// minor, and the one of kind's default version is pinned to exactly the
// digest the kind module in go.mod names, as the workflow's header says.
func TestKindNodeImages(t *testing.T) {
	defTag, _, _ := strings.Cut(defaults.Image, "@")
	seen := false
	for _, e := range readKindJob(t).Strategy.Matrix.Include {
		tag, _, _ := strings.Cut(e.NodeImage, "@")
		if !strings.HasPrefix(tag, "kindest/node:v"+e.Kubernetes+".") {
			t.Errorf("job %s runs %s, of another version", e.Kubernetes, e.NodeImage)
		}
		if tag == defTag {
			seen = true
			if e.NodeImage != defaults.Image {
				t.Errorf("job %s pins %s, kind's default is %s", e.Kubernetes, e.NodeImage, defaults.Image)
			}
		}
	}
	if !seen {
		t.Errorf("no job runs kind's default image %s", defaults.Image)
	}
}

// makeDryRun is `make -n target` at the root with env added: the commands
// make would run, none run.
func makeDryRun(t *testing.T, target string, env map[string]string) string {
	t.Helper()
	cmd := exec.Command("make", "-n", target)
	cmd.Dir = root
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return string(out)
}

// TestKindJobBuildsNoStandIns: with the environment kind-e2e.yaml's jobs
// set (KIND_PULL_UPSTREAM_IMAGES=1: kind/up.sh loads no stand-in),
// `make kind-e2e` builds zonepath's images only, and compiles no agnhost;
// without it, make images builds the stand-ins as before.
func TestKindJobBuildsNoStandIns(t *testing.T) {
	job := readKindJob(t)
	if job.Env["KIND_PULL_UPSTREAM_IMAGES"] != "1" {
		t.Fatalf("kind-e2e.yaml sets KIND_PULL_UPSTREAM_IMAGES=%q; this test expects the jobs to pull upstream's images",
			job.Env["KIND_PULL_UPSTREAM_IMAGES"])
	}
	tests := []struct {
		name        string
		env         map[string]string
		wantFlag    string
		wantAgnhost bool
	}{
		{"the kind job's environment", job.Env, "--stand-ins=false", false},
		{"offline", map[string]string{"KIND_PULL_UPSTREAM_IMAGES": ""}, "--stand-ins=true", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := makeDryRun(t, "kind-e2e", tc.env)
			if !strings.Contains(out, tc.wantFlag) {
				t.Errorf("make -n kind-e2e runs imagebuild without %s:\n%s", tc.wantFlag, out)
			}
			if got := strings.Contains(out, "components.sh agnhost"); got != tc.wantAgnhost {
				t.Errorf("make -n kind-e2e builds agnhost: %t, want %t", got, tc.wantAgnhost)
			}
		})
	}
}

// TestKindJobRefreshesApt: make images fetches packages with apt-get
// download, which as the runner's user cannot update apt's lists itself;
// the job refreshes them, through sudo, before make runs.
func TestKindJobRefreshesApt(t *testing.T) {
	refreshed := false
	for _, s := range readKindJob(t).Steps {
		switch {
		case strings.Contains(s.Run, "sudo -n apt-get update"):
			refreshed = true
		case strings.Contains(s.Run, "make kind-e2e") && !refreshed:
			t.Fatal("kind-e2e.yaml runs make kind-e2e before refreshing apt's lists with sudo -n apt-get update")
		}
	}
}

// schedulerBefore137 is the deploy/components entry that lets
// zonepath-scheduler (kube-scheduler v1.37) take its lease on an older
// API server (its kustomization.yaml says why).
const schedulerBefore137 = "scheduler-before-1.37"

// TestKindJobSchedulerComponent: the jobs on Kubernetes before v1.37, and
// only those, deploy zonepath with scheduler-before-1.37, through
// KIND_E2E_COMPONENTS, which kind/stack.sh reads for every overlay.
func TestKindJobSchedulerComponent(t *testing.T) {
	job := readKindJob(t)
	if got := job.Env["KIND_E2E_COMPONENTS"]; got != "${{ matrix.components }}" {
		t.Fatalf("kind-e2e.yaml sets KIND_E2E_COMPONENTS=%q, want the matrix entry's components", got)
	}
	for _, e := range job.Strategy.Matrix.Include {
		minor, err := strconv.Atoi(strings.TrimPrefix(e.Kubernetes, "1."))
		if err != nil {
			t.Fatalf("job %q: not a 1.<minor> version", e.Kubernetes)
		}
		comps := strings.Fields(e.Components)
		if got, want := slices.Contains(comps, schedulerBefore137), minor < 37; got != want {
			t.Errorf("job %s deploys %s: %t, want %t", e.Kubernetes, schedulerBefore137, got, want)
		}
		for _, c := range comps {
			if _, err := os.Stat(filepath.Join(root, "deploy/components", c, "kustomization.yaml")); err != nil {
				t.Errorf("job %s: component %s: %v", e.Kubernetes, c, err)
			}
		}
	}
}
