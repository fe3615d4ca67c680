package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// stepKeys are the keys a composite action step may have (GitHub's
// metadata syntax: runs.steps[*]); timeout-minutes, for one, is a
// workflow-only key.
var stepKeys = []string{"name", "id", "if", "run", "shell", "uses", "with", "env", "working-directory", "continue-on-error"}

type action struct {
	Name        string           `json:"name"`
	Author      string           `json:"author,omitempty"`
	Description string           `json:"description"`
	Inputs      map[string]input `json:"inputs,omitempty"`
	Outputs     map[string]struct {
		Description string `json:"description"`
		Value       string `json:"value"`
	} `json:"outputs,omitempty"`
	Runs struct {
		Using string           `json:"using"`
		Steps []map[string]any `json:"steps"`
	} `json:"runs"`
	Branding map[string]string `json:"branding,omitempty"`
}

type input struct {
	Description        string `json:"description"`
	Required           bool   `json:"required,omitempty"`
	Default            string `json:"default,omitempty"`
	DeprecationMessage string `json:"deprecationMessage,omitempty"`
}

func main() {
	out := flag.String("out", "", "directory for the generated workflows (required)")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: actioncheck --out DIR action.yml...") }
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	failed := false
	for _, path := range flag.Args() {
		if err := check(path, *out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// check checks one action and writes its workflow to out/<action dir>.yaml.
func check(path, out string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	a, err := parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	wf, err := workflow(path, a)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	dst := filepath.Join(out, filepath.Base(filepath.Dir(path))+".yaml")
	header := fmt.Sprintf("# The steps of %s as a workflow, written by hack/cmd/actioncheck for actionlint.\n", path)
	fmt.Printf("actioncheck: %s: %d steps → %s\n", path, len(a.Runs.Steps), dst)
	return os.WriteFile(dst, append([]byte(header), wf...), 0o644)
}

// parse reads action metadata strictly and checks the composite rules;
// errors name the key.
func parse(data []byte) (*action, error) {
	var a action
	if err := yaml.UnmarshalStrict(data, &a); err != nil {
		return nil, err
	}
	var errs []string
	if a.Name == "" {
		errs = append(errs, "name: required")
	}
	if a.Description == "" {
		errs = append(errs, "description: required")
	}
	for _, name := range slices.Sorted(maps.Keys(a.Inputs)) {
		if a.Inputs[name].Description == "" {
			errs = append(errs, fmt.Sprintf("inputs.%s.description: required", name))
		}
	}
	if a.Runs.Using != "composite" {
		errs = append(errs, fmt.Sprintf("runs.using: %q, but only composite actions are checked", a.Runs.Using))
	}
	if len(a.Runs.Steps) == 0 {
		errs = append(errs, "runs.steps: a composite action needs steps")
	}
	for i, step := range a.Runs.Steps {
		errs = append(errs, checkStep(i, step)...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return &a, nil
}

func checkStep(i int, step map[string]any) []string {
	var errs []string
	at := fmt.Sprintf("runs.steps[%d]", i)
	for _, k := range slices.Sorted(maps.Keys(step)) {
		if !slices.Contains(stepKeys, k) {
			errs = append(errs, fmt.Sprintf("%s.%s: not a key of composite action steps", at, k))
		}
	}
	_, run := step["run"]
	_, uses := step["uses"]
	switch {
	case run == uses:
		errs = append(errs, at+": needs exactly one of run and uses")
	case run && step["shell"] == nil:
		errs = append(errs, at+".shell: required on run steps of composite actions")
	}
	return errs
}

// workflow is the action's steps as one job of a workflow_call workflow
// whose inputs are the action's (all strings, as action inputs are).
func workflow(path string, a *action) ([]byte, error) {
	inputs := map[string]any{}
	for name, in := range a.Inputs {
		spec := map[string]any{"type": "string", "description": in.Description, "required": in.Required}
		if !in.Required {
			spec["default"] = in.Default
		}
		inputs[name] = spec
	}
	return yaml.Marshal(map[string]any{
		"name": "steps of " + path,
		"on":   map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"jobs": map[string]any{"action": map[string]any{"runs-on": "ubuntu-latest", "steps": a.Runs.Steps}},
	})
}
