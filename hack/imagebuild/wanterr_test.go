package main

import (
	"strings"
	"testing"
)

// wantedErr checks err against want, a substring of the error a test case
// expects ("" for none), and says whether an error was wanted, so that the
// case ends there: if wantedErr(t, err, tc.wantErr) { return }.
func wantedErr(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
	return true
}
