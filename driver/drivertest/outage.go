package drivertest

import (
	"fmt"
	"os"
	"testing"
)

// OutageRule is a fault rule that takes down every zone of the segment
// key=value (driver/faults/README.md, action.outage).
func OutageRule(key, value string) string {
	return fmt.Sprintf("rules:\n- name: outage-%s\n  match:\n    segment: {%q: %q}\n  action:\n    outage: true\n", value, key, value)
}

// NoRules is a fault file without rules; with it an outage is lifted.
const NoRules = "rules: []\n"

// SetFaults replaces the fault file the way the driver's users do (a new
// file renamed over it) and has the driver read it before returning, so
// that the next call sees the new rules. The driver must have been
// started with Options.Faults.
func (d *Driver) SetFaults(t testing.TB, rules string) {
	t.Helper()
	if d.FaultsFile == "" {
		t.Fatal("drivertest: SetFaults on a driver started without Options.Faults")
	}
	tmp := d.FaultsFile + ".new"
	if err := os.WriteFile(tmp, []byte(rules), 0o600); err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	if err := os.Rename(tmp, d.FaultsFile); err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	if err := d.Config.Faults.Reload(); err != nil {
		t.Fatalf("drivertest: %v", err)
	}
}
