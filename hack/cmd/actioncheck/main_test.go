package main

import (
	"io"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/zonepath/zonepath/internal/wanterr"
)

const goodAction = `name: demo
description: a demo
inputs:
  endpoint:
    description: where
    required: true
runs:
  using: composite
  steps:
    - name: Run
      shell: bash
      env:
        EP: ${{ inputs.endpoint }}
      run: echo "$EP"
`

func TestParse(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "good", yaml: goodAction},
		{name: "run step without shell", yaml: strings.Replace(goodAction, "      shell: bash\n", "", 1),
			wantErr: "runs.steps[0].shell: required on run steps of composite actions"},
		{name: "workflow-only key", yaml: strings.Replace(goodAction, "      shell: bash\n", "      shell: bash\n      timeout-minutes: 5\n", 1),
			wantErr: "runs.steps[0].timeout-minutes: not a key of composite action steps"},
		{name: "run and uses", yaml: strings.Replace(goodAction, "      shell: bash\n", "      shell: bash\n      uses: actions/checkout@v6\n", 1),
			wantErr: "runs.steps[0]: needs exactly one of run and uses"},
		{name: "not composite", yaml: strings.Replace(goodAction, "using: composite", "using: node24", 1),
			wantErr: `runs.using: "node24", but only composite actions are checked`},
		{name: "input without description", yaml: strings.Replace(goodAction, "    description: where\n", "", 1),
			wantErr: "inputs.endpoint.description: required"},
		{name: "misspelt top-level key", yaml: strings.Replace(goodAction, "inputs:", "input:", 1),
			wantErr: `unknown field "input"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.yaml))
			wanterr.Check(t, err, tc.wantErr)
		})
	}
}

// TestWorkflowIsLinted: the generated workflow lets actionlint find what
// it never finds in action.yml itself, here an input the steps use but
// the action does not declare.
func TestWorkflowIsLinted(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "good", yaml: goodAction},
		{name: "undeclared input", yaml: strings.Replace(goodAction, "inputs.endpoint }}", "inputs.endpont }}", 1),
			wantErr: `property "endpont" is not defined`},
		{name: "unknown context property", yaml: strings.Replace(goodAction, "inputs.endpoint }}", "github.action_pth }}", 1),
			wantErr: `property "action_pth" is not defined`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			wf, err := workflow("action.yml", a)
			if err != nil {
				t.Fatal(err)
			}
			linter, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			errs, err := linter.Lint("action.yml", wf, nil)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, e := range errs {
				msgs = append(msgs, e.Error())
			}
			got := strings.Join(msgs, "\n")
			if tc.wantErr == "" && got != "" || !strings.Contains(got, tc.wantErr) {
				t.Fatalf("actionlint on the generated workflow: %q, want %q", got, tc.wantErr)
			}
		})
	}
}
