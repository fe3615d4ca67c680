package e2e

import "testing"

func TestPreScanBool(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--zonepath.upstream-suites"}, true},
		{[]string{"-zonepath.upstream-suites=true"}, true},
		{[]string{"--zonepath.upstream-suites=false"}, false},
		{[]string{"--zonepath.upstream-suites=nonsense"}, false},
		// After a flag's value given as the next word (make kind-upstream).
		{[]string{"--kubeconfig", "/tmp/kubeconfig", "--zonepath.upstream-suites"}, true},
		{[]string{"--storage.testdriver", "d.yaml", "--ginkgo.v"}, false},
		// Not after "--", where flags end.
		{[]string{"--", "--zonepath.upstream-suites"}, false},
		// Another flag with the name as a prefix.
		{[]string{"--zonepath.upstream-suites-x"}, false},
	} {
		if got := preScanBool(c.args, upstreamSuitesFlag); got != c.want {
			t.Errorf("preScanBool(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
