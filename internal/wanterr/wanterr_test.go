package wanterr

import (
	"errors"
	"testing"
)

// recorder is a testing.TB that records a failure instead of stopping.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatalf(string, ...any) { r.failed = true }

// outcome is what Check did: fail the test, and report an error wanted.
type outcome struct{ failed, wanted bool }

func TestCheck(t *testing.T) {
	tests := map[string]struct {
		err  error
		want string
		out  outcome
	}{
		"no error wanted, none":  {},
		"no error wanted, one":   {err: errors.New("boom"), out: outcome{failed: true}},
		"error wanted, matching": {err: errors.New("--flag: bad value"), want: "--flag", out: outcome{wanted: true}},
		"error wanted, other":    {err: errors.New("boom"), want: "--flag", out: outcome{failed: true, wanted: true}},
		"error wanted, none":     {want: "--flag", out: outcome{failed: true, wanted: true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := &recorder{TB: t}
			wanted := Check(r, tc.err, tc.want)
			if got := (outcome{r.failed, wanted}); got != tc.out {
				t.Errorf("Check(%v, %q) = %+v, want %+v", tc.err, tc.want, got, tc.out)
			}
		})
	}
}
