package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/fakezones/cluster"
)

// The controller's log as the driver writes it (driver/faults), with a
// fault of another file and other lines between.
const firedLog = `I1206 06:19:32.909985   22967 plugin.go:271] "Failed" method="/csi.v1.Controller/ControllerPublishVolume" err="rpc error: code = ResourceExhausted desc = limit"
I1206 06:20:15.338561    1199 injector.go:227] "Injecting fault" method="/csi.v1.Controller/CreateVolume" rule="cv-1" matchedCall=1 file="/out/clusters/c-fault-rules.yaml"
I1206 06:20:16.974936    1199 injector.go:227] "Injecting fault" method="/csi.v1.Controller/CreateVolume" rule="cv-5" matchedCall=5 file="/out/clusters/c-fault-rules.yaml"
I1206 06:20:17.000000    1199 injector.go:227] "Injecting fault" method="/csi.v1.Controller/DeleteVolume" rule="dv-1" matchedCall=1 file="/other/fault-rules.yaml"
I1206 06:20:18.000000    1199 injector.go:227] "Injecting fault" method="/csi.v1.Controller/ControllerPublishVolume" rule="cp-1" matchedCall=1 file="/out/clusters/c-fault-rules.yaml"
`

const firedRules = `rules:
- {name: cv-1, match: {rpc: CreateVolume, nth: 1, count: 1}, action: {code: Unavailable}}
- {name: cv-5, match: {rpc: CreateVolume, nth: 5, count: 1}, action: {code: Aborted}}
- {name: cv-99, match: {rpc: CreateVolume, nth: 99, count: 1}, action: {code: Aborted}}
- {name: cp-1, match: {rpc: ControllerPublishVolume, nth: 1, count: 1}, action: {code: Aborted}}
- {name: dv-1, match: {rpc: DeleteVolume, nth: 1, count: 1}, action: {code: Unavailable}}
- {name: snap-1, match: {rpc: "Create*Snapshot", nth: 1, count: 1}, action: {code: Unavailable}}
`

// TestCountFired: faults are counted by rule and by RPC from the
// controller's log, only those of the personality's fault file.
func TestCountFired(t *testing.T) {
	got, err := countFired(strings.NewReader(firedLog), "/out/clusters/c-fault-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := firedFaults{
		ByRule: map[string]int{"cv-1": 1, "cv-5": 1, "cp-1": 1},
		ByRPC:  map[string]int{"CreateVolume": 2, "ControllerPublishVolume": 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("countFired (-want +got):\n%s", diff)
	}
	if s := got.String(); s != "ControllerPublishVolume 1, CreateVolume 2" {
		t.Errorf("String() = %q", s)
	}
	if s := (firedFaults{}).String(); s != "none" {
		t.Errorf("String() of nothing = %q", s)
	}
}

// TestNeverFired: an RPC of the rules none of whose rules fired fails the
// run (the e2e run made no such call: flaky-backend before its nodes
// had controller-managed attach, 0 ControllerPublishVolume faults); a
// rule whose later window did not fire, beside one that did, does not.
func TestNeverFired(t *testing.T) {
	rules, err := faults.Parse([]byte(firedRules))
	if err != nil {
		t.Fatal(err)
	}
	fired, err := countFired(strings.NewReader(firedLog), "/out/clusters/c-fault-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// dv-1 fired from another file only: it does not count.
	if diff := cmp.Diff([]string{"Create*Snapshot", "DeleteVolume"}, neverFired(rules, fired)); diff != "" {
		t.Errorf("neverFired (-want +got):\n%s", diff)
	}
	all := firedFaults{ByRule: map[string]int{"cv-1": 3, "cp-1": 1, "dv-1": 2, "snap-1": 1}}
	if got := neverFired(rules, all); len(got) != 0 {
		t.Errorf("neverFired with every RPC fired = %v, want none", got)
	}
}

// TestJudgeFired: only faults logged after the offset taken before the
// run count, so a cluster's earlier runs do not hide a run without them.
func TestJudgeFired(t *testing.T) {
	dir := t.TempDir()
	logPath := cluster.ControllerLog(dir)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, []byte(firedLog), 0o644); err != nil {
		t.Fatal(err)
	}
	rules, err := faults.Parse([]byte("rules:\n- {name: cv-1, match: {rpc: CreateVolume, nth: 1, count: 1}, action: {code: Unavailable}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := judgeFired(dir, "/out/clusters/c-fault-rules.yaml", 0, rules); err != nil || f.ByRPC["CreateVolume"] != 2 {
		t.Errorf("judgeFired from the start = %v, %v; want CreateVolume 2, no error", f, err)
	}
	offset := logOffset(dir)
	if offset != int64(len(firedLog)) {
		t.Fatalf("logOffset = %d, want %d", offset, len(firedLog))
	}
	f, err := judgeFired(dir, "/out/clusters/c-fault-rules.yaml", offset, rules)
	if err == nil || !strings.Contains(err.Error(), "CreateVolume never fired") || f.String() != "none" {
		t.Errorf("judgeFired after the offset = %v, %v; want none fired and an error naming CreateVolume", f, err)
	}
}
