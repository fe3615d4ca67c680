package wanterr

import (
	"strings"
	"testing"
)

// Check fails t unless err contains want; want "" wants no error. It
// reports whether an error was wanted: such a case has nothing more to
// check, so the test returns.
func Check(t testing.TB, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
	return true
}
