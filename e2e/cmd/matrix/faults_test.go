package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFaultRulesChecked: a personality's faultRules.yaml is parsed as the
// driver will at load, so a typo stops the matrix before any cluster;
// its group then starts with a fault file, a group without one does not.
func TestFaultRulesChecked(t *testing.T) {
	root := t.TempDir()
	folder(t, root, "flaky", "description: flaky\n", true)
	folder(t, root, "typo", "description: typo\n", true)
	folder(t, root, "plain", "description: plain\n", true)
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(root, name, faultRulesName), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("flaky", "rules:\n- name: r\n  match: {rpc: CreateVolume}\n  action: {code: Unavailable}\n")
	write("typo", "rules:\n- name: r\n  match: {rpc: CreateVolumes}\n  action: {code: Unavailable}\n")
	if _, err := loadPersonalities(root, []string{"typo"}); err == nil || !strings.Contains(err.Error(), "personality typo: "+faultRulesName) {
		t.Fatalf("loading a personality with a bad fault file: %v, want an error naming it", err)
	}
	ps, err := loadPersonalities(root, []string{"flaky", "plain"})
	if err != nil {
		t.Fatal(err)
	}
	groups := groupByCluster(root, ps)
	if !groups[0].hasFaultRules() || groups[1].hasFaultRules() {
		t.Errorf("hasFaultRules = %v (flaky), %v (plain); want true, false", groups[0].hasFaultRules(), groups[1].hasFaultRules())
	}
}

// TestSetFaultRules: the file is replaced and the call returns once the
// controller's log shows one more reload; unchanged content returns at
// once, and a controller that never re-reads is an error, not a hang.
func TestSetFaultRules(t *testing.T) {
	cluster := t.TempDir()
	logs := filepath.Join(cluster, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(logs, "zonepath-controller.log")
	if err := os.WriteFile(log, []byte("I1 Reloaded fault rules\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(path, []byte(noRules), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		f, _ := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
		_, _ = f.WriteString("I2 Reloaded fault rules\n")
		_ = f.Close()
	}()
	rules := []byte("rules:\n- name: r\n  match: {rpc: CreateVolume}\n  action: {code: Unavailable}\n")
	if err := setFaultRules(context.Background(), path, cluster, rules); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(rules) {
		t.Errorf("fault file = %q, want the personality's rules", got)
	}
	if err := setFaultRules(context.Background(), path, cluster, rules); err != nil {
		t.Errorf("unchanged rules: %v, want nil at once", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := setFaultRules(ctx, path, cluster, []byte(noRules)); err == nil {
		t.Error("no reload in the log: nil, want an error")
	}
}
