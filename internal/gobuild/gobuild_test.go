package gobuild

import (
	"slices"
	"testing"
)

// TestArgsFollowTheTestBinary: -race exactly when this test binary was
// built with the race detector (go test -race sets the race build tag).
func TestArgsFollowTheTestBinary(t *testing.T) {
	got := Args("bin/x", "./cmd/x")
	if want := slices.Contains(got, "-race"); want != raceEnabled {
		t.Fatalf("Args = %q; race detector in this test binary: %v", got, raceEnabled)
	}
	if got[0] != "build" || !slices.Equal(got[len(got)-3:], []string{"-o", "bin/x", "./cmd/x"}) {
		t.Fatalf("Args = %q, want build [-race] -o bin/x ./cmd/x", got)
	}
}
