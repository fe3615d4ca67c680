package drivertest

import (
	"fmt"
	"os"
	"path/filepath"
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

// OutageCommands are shell commands that take the zones of key=value down
// (an outage rule as the driver's whole fault file) and bring them back
// (no rules), replacing the file as SetFaults does; for suites that run
// commands, such as zonepath-sanity's outageCommand and recoverCommand.
// The driver must have been started with Options.Faults.
func (d *Driver) OutageCommands(t testing.TB, key, value string) (down, up string) {
	t.Helper()
	if d.FaultsFile == "" {
		t.Fatal("drivertest: OutageCommands on a driver started without Options.Faults")
	}
	dir := filepath.Dir(d.FaultsFile)
	for name, rules := range map[string]string{"outage.yaml": OutageRule(key, value), "no-rules.yaml": NoRules} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(rules), 0o600); err != nil {
			t.Fatalf("drivertest: %v", err)
		}
	}
	replaceBy := func(name string) string {
		return fmt.Sprintf("cp '%s' '%s.tmp' && mv '%s.tmp' '%s'", filepath.Join(dir, name), d.FaultsFile, d.FaultsFile, d.FaultsFile)
	}
	return replaceBy("outage.yaml"), replaceBy("no-rules.yaml")
}
