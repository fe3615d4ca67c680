package main

import (
	"strings"
	"testing"
)

func TestRunNeedsBothFlags(t *testing.T) {
	for _, args := range [][2]string{{"", ""}, {"from", ""}, {"", "out"}} {
		if err := run(args[0], args[1]); err == nil || !strings.Contains(err.Error(), "--from and --out are required") {
			t.Errorf("run(%q, %q) = %v, want the missing-flag error", args[0], args[1], err)
		}
	}
}
