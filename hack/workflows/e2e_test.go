package workflows

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	"sigs.k8s.io/yaml"
)

// TestE2EAction runs the zonepath-e2e action's script with a stub suite:
// the required files are checked before the suite runs, the label filter
// and args reach it as the words they mean, and nothing is evaluated.
func TestE2EAction(t *testing.T) {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(abs, "e2e/testdata/kind/zonepath.yaml") // any existing file will do for the stub
	driver := filepath.Join(abs, "e2e/testdata/kind/zonepath.yaml")
	ext := filepath.Join(abs, "e2e/testdata/kind/zonepath-ext.yaml")
	base := []string{"via-sudo=no", "--kubeconfig", kubeconfig, "--storage.testdriver", driver, "--zonepath.driver-ext", ext, "--ginkgo.no-color"}
	files := map[string]string{"ZP_KUBECONFIG": kubeconfig, "ZP_TESTDRIVER": driver, "ZP_DRIVER_EXT": ext}
	with := func(env map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range files {
			out[k] = v
		}
		for k, v := range env {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    []string // after base
		wantErr string
	}{
		{name: "files only", env: with(nil), want: []string{}},
		{name: "label filter with spaces and operators", env: with(map[string]string{"ZP_LABEL_FILTER": "!feature-gate-off && !capability-off"}),
			want: []string{"--ginkgo.label-filter", "!feature-gate-off && !capability-off"}},
		{name: "JUnit in a new folder", env: with(map[string]string{"ZP_JUNIT": "DIR/out/e2e.xml"}),
			want: []string{"--ginkgo.junit-report", "DIR/out/e2e.xml"}},
		{name: "several lines of args", env: with(map[string]string{"ZP_ARGS": "--ginkgo.focus \"scenario 1[0-9]:\"\n--ginkgo.timeout=2h\n--x $(touch DIR/pwned)"}),
			want: []string{"--ginkgo.focus", "scenario 1[0-9]:", "--ginkgo.timeout=2h", "--x", "$(touch", "DIR/pwned)"}},
		{name: "no kubeconfig", env: with(map[string]string{"ZP_KUBECONFIG": ""}), wantErr: "the kubeconfig input is required"},
		{name: "missing extension file", env: with(map[string]string{"ZP_DRIVER_EXT": "DIR/nope.yaml"}), wantErr: "(input driver-ext) does not exist"},
		{name: "unmatched quote", env: with(map[string]string{"ZP_ARGS": "--ginkgo.focus 'x"}), wantErr: "unmatched quote"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runAction(t, ".github/actions/zonepath-e2e/e2e.sh", tc.env)
			if !r.check(t, tc.wantErr, append(slices.Clone(base), tc.want...)) {
				return
			}
			if tc.env["ZP_JUNIT"] != "" && !fileExists(filepath.Dir(strings.ReplaceAll(tc.env["ZP_JUNIT"], "DIR", r.workdir))) {
				t.Error("the JUnit report's folder was not made")
			}
		})
	}
}

// TestE2EActionExample: the example workflow a vendor copies passes the
// zonepath-e2e action exactly the inputs it has, every required one
// among them, and creates the cluster from kind's default node image.
func TestE2EActionExample(t *testing.T) {
	var action struct {
		Inputs map[string]struct {
			Required bool `json:"required"`
		} `json:"inputs"`
	}
	readYAML(t, ".github/actions/zonepath-e2e/action.yml", &action)
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Uses string            `json:"uses"`
				Run  string            `json:"run"`
				With map[string]string `json:"with"`
			} `json:"steps"`
		} `json:"jobs"`
	}
	readYAML(t, ".github/actions/zonepath-e2e/example-workflow.yaml", &wf)
	uses, kindUp := 0, false
	for _, job := range wf.Jobs {
		for _, s := range job.Steps {
			kindUp = kindUp || strings.Contains(s.Run, "kind-up KIND_NODE_IMAGE="+defaults.Image)
			if !strings.HasPrefix(s.Uses, "zonepath/zonepath/.github/actions/zonepath-e2e@") {
				continue
			}
			uses++
			for k := range s.With {
				if _, ok := action.Inputs[k]; !ok {
					t.Errorf("the example passes %s, which the action does not take", k)
				}
			}
			for k, in := range action.Inputs {
				if _, ok := s.With[k]; in.Required && !ok {
					t.Errorf("the example leaves out the required input %s", k)
				}
			}
		}
	}
	if uses != 1 || !kindUp {
		t.Errorf("the example uses the action %d times (want 1); makes the cluster with make kind-up on %s: %t", uses, defaults.Image, kindUp)
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}
