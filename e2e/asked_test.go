package e2e

import (
	"flag"
	"io"
	"testing"
)

// TestAskedForSuite: only flags on the command line start a suite run,
// never KUBECONFIG in the environment (go test ./... must not touch a
// developer's cluster).
func TestAskedForSuite(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"-test.v"}, false},
		{[]string{"--kubeconfig=/k"}, true},
		{[]string{"-storage.testdriver", "d.yaml"}, true},
	}
	t.Setenv("KUBECONFIG", "/from/the/environment")
	for _, tc := range tests {
		fs := flag.NewFlagSet("zonepath-e2e", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.String("kubeconfig", "", "")
		fs.String("storage.testdriver", "", "")
		fs.Bool("test.v", false, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := askedForSuite(fs); got != tc.want {
			t.Errorf("askedForSuite(%v) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
