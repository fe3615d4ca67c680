package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/reporters"
)

const (
	blockSpec = "[It] External Storage [Driver: zonepath.csi.dev] [Testpattern: Dynamic PV (block volmode)] volumeMode should fail to use a volume in a pod with mismatched mode"
	fsSpec    = "[It] External Storage [Driver: zonepath.csi.dev] [Testpattern: Dynamic PV (default fs)] subPath should support existing directory"
)

func tc(name, status, skip string) reporters.JUnitTestCase {
	c := reporters.JUnitTestCase{Name: name, Status: status}
	if skip != "" {
		c.Skipped = &reporters.JUnitSkipped{Message: skip}
	}
	return c
}

func TestTable(t *testing.T) {
	for _, c := range []struct {
		name                string
		cases               []reporters.JUnitTestCase
		wantRows            []string
		wantErr, wantOutput string
	}{
		{
			name: "all passed",
			cases: []reporters.JUnitTestCase{
				tc(blockSpec, "passed", ""), tc(fsSpec, "passed", ""),
				tc("[BeforeSuite]", "passed", ""),
			},
			wantRows: []string{"volumeMode (Dynamic PV (block volmode))      1      0       0", "all      2      0       0"},
		},
		{
			name: "a failure fails the run",
			cases: []reporters.JUnitTestCase{
				tc(blockSpec, "failed", ""), tc(fsSpec, "passed", ""),
			},
			wantErr:    "1 of 2 specs failed",
			wantOutput: "failed:\n  External Storage",
		},
		{
			name: "a run-time skip counts with its reason; a --ginkgo.skip does not count",
			cases: []reporters.JUnitTestCase{
				tc(blockSpec, "skipped", "skipped - Driver zonepath.csi.dev doesn't support Block"),
				tc(fsSpec, "skipped", "skipped"), tc(fsSpec, "passed", ""),
			},
			wantRows:   []string{"all      1      0       1"},
			wantOutput: "1  Driver zonepath.csi.dev doesn't support Block\n         - External Storage [Driver: zonepath.csi.dev] [Testpattern: Dynamic PV (block volmode)] volumeMode",
		},
		{
			name:    "nothing passed",
			cases:   []reporters.JUnitTestCase{tc(fsSpec, "skipped", "skipped")},
			wantErr: "no spec passed",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := newTable()
			for _, x := range c.cases {
				tb.add(x)
			}
			var out bytes.Buffer
			tb.write(&out)
			for _, row := range append(c.wantRows, c.wantOutput) {
				if !strings.Contains(squeeze(out.String()), squeeze(row)) {
					t.Errorf("output lacks %q:\n%s", row, out.String())
				}
			}
			err := tb.verdict()
			if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("verdict = %v, want an error containing %q", err, c.wantErr)
			}
		})
	}
}

// squeeze collapses runs of spaces, so the checks do not depend on the
// table's column widths.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
