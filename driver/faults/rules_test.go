package faults

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
)

// oneRule renders a file with a single rule named "r".
func oneRule(match, action string) string {
	return fmt.Sprintf("rules:\n- name: r\n  match:\n%s\n  action:\n%s\n", indent(match), indent(action))
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}

func TestParseErrors(t *testing.T) {
	const okMatch, okAction = "rpc: CreateSnapshot", "code: Unavailable"
	tooMany := &strings.Builder{}
	tooMany.WriteString("rules:\n")
	for n := range MaxRules + 1 {
		fmt.Fprintf(tooMany, "- {name: r%d, match: {rpc: Probe}, action: {code: Aborted}}\n", n)
	}
	tests := []struct {
		name, file, want string
	}{
		{"unknown rpc", oneRule("rpc: CreateSnapshots", okAction), `rules[0] "r": match.rpc: unknown CSI method "CreateSnapshots" (valid: `},
		{"unknown full method", oneRule("rpc: /csi.v1.Node/CreateSnapshot", okAction), `match.rpc: unknown CSI method`},
		{"glob matching nothing", oneRule(`rpc: "*Snapshop*"`, okAction), `match.rpc: glob "*Snapshop*" matches no CSI method`},
		{"malformed glob", oneRule(`rpc: "Create["`, okAction), `match.rpc: "Create[": syntax error in pattern`},
		{"missing rpc", oneRule("name: x", okAction), `match.rpc: required`},
		{"malformed name glob", oneRule(okMatch+"\nname: snap-[", okAction), `match.name: "snap-["`},
		{"empty segment key", oneRule(okMatch+"\nsegment: {'': a}", okAction), `match.segment: empty topology key`},
		{"negative nth", oneRule(okMatch+"\nnth: -1", okAction), `match.nth: -1`},
		{"negative count", oneRule(okMatch+"\ncount: -2", okAction), `match.count: -2`},
		{"bad code", oneRule(okMatch, "code: Bogus"), `action.code: unknown gRPC code "Bogus" (valid: Canceled,`},
		{"upper-case code", oneRule(okMatch, "code: RESOURCE_EXHAUSTED"), `action.code: unknown gRPC code`},
		{"OK code", oneRule(okMatch, "code: OK"), `action.code: "OK" is not a fault`},
		{"code and mutate", oneRule(okMatch, "code: Aborted\nmutate: {clear: [snapshot]}"), `action: code and mutate are mutually exclusive`},
		{"empty action", oneRule(okMatch, "{}"), `action: one of code, delay, mutate or outage is required`},
		{"message without code", oneRule(okMatch, "delay: 1s\nmessage: hi"), `action.message: only valid with action.code`},
		{"when without code", oneRule(okMatch, "delay: 1s\nwhen: after"), `action.when: only valid with action.code`},
		{"bad when", oneRule(okMatch, "code: Aborted\nwhen: later"), `action.when: "later"`},
		{"bad duration", oneRule(okMatch, "delay: 2 seconds"), `action.delay: time: `},
		{"numeric duration", oneRule(okMatch, "delay: 2"), `action.delay: time: missing unit in duration "2"`},
		{"zero duration", oneRule(okMatch, "delay: 0s"), `action.delay: 0s, must be positive`},
		{"empty mutate", oneRule(okMatch, "mutate: {}"), `action.mutate: clear or set is required`},
		{"bad clear path", oneRule(okMatch, "mutate: {clear: [snapshot..accessible_topology]}"), `action.mutate.clear[0]: invalid field path "snapshot..accessible_topology"`},
		{"bad set path", oneRule(okMatch, "mutate: {set: {'snapshot.1id': x}}"), `action.mutate.set["snapshot.1id"]: invalid field path`},
		{"null set value", oneRule(okMatch, "mutate: {set: {snapshot.snapshot_id: null}}"), `set value must be a string, number, bool, list or map, got null`},
		{"empty set value", oneRule(okMatch, "mutate: {set: {snapshot.snapshot_id: }}"), `set value must be a string, number, bool, list or map, got null`},
		{"missing name", "rules:\n- {match: {rpc: Probe}, action: {code: Aborted}}", `rules[0] "": name: required`},
		{"long name", fmt.Sprintf("rules:\n- {name: %s, match: {rpc: Probe}, action: {code: Aborted}}", strings.Repeat("n", MaxNameLength+1)), `name: longer than 128 characters`},
		{"duplicate name", "rules:\n- {name: a, match: {rpc: Probe}, action: {code: Aborted}}\n- {name: a, match: {rpc: Probe}, action: {code: Aborted}}", `rules[1] "a": name: duplicate of rules[0]`},
		{"index of bad rule", "rules:\n- {name: a, match: {rpc: Probe}, action: {code: Aborted}}\n- {name: b, match: {rpc: Probe}, action: {code: Nope}}", `rules[1] "b": action.code`},
		{"unknown field in match", oneRule(okMatch+"\nzone: b", okAction), `unknown field "zone"`},
		{"unknown top-level field", "rule: []", `unknown field "rule"`},
		{"duplicate key", "rules: []\nrules: []", `decoding YAML`},
		{"too many rules", tooMany.String(), `rules: 1001 rules, at most 1000 allowed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.file))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, r *rule)
	}{
		{"defaults", oneRule("rpc: CreateSnapshot", "code: Unavailable"), func(t *testing.T, r *rule) {
			if r.nth != 1 || r.count != 0 || r.after || r.delay != 0 {
				t.Errorf("nth=%d count=%d after=%v delay=%v, want 1 0 false 0", r.nth, r.count, r.after, r.delay)
			}
			if r.code != codes.Unavailable || r.message != "injected fault r" {
				t.Errorf("code=%v message=%q", r.code, r.message)
			}
		}},
		{"explicit", oneRule("rpc: /csi.v1.Controller/CreateSnapshot\nnth: 3\ncount: 2", "code: Aborted\nmessage: m\nwhen: after\ndelay: 15ms"), func(t *testing.T, r *rule) {
			if r.nth != 3 || r.count != 2 || !r.after || r.delay.Milliseconds() != 15 || r.message != "m" || !r.rpc.full {
				t.Errorf("unexpected rule %+v", r)
			}
		}},
		{"set paths sorted and numbers kept literally", oneRule("rpc: CreateSnapshot", "mutate: {set: {snapshot.size_bytes: 9007199254740993, snapshot.ready_to_use: true, snapshot.snapshot_id: x}}"), func(t *testing.T, r *rule) {
			got := fmt.Sprint(r.set)
			want := "[{{snapshot.ready_to_use [snapshot ready_to_use]} {true false}} {{snapshot.size_bytes [snapshot size_bytes]} {9007199254740993 false}} {{snapshot.snapshot_id [snapshot snapshot_id]} {x false}}]"
			if got != want {
				t.Errorf("set = %s, want %s", got, want)
			}
		}},
		{"set values as JSON string and as native YAML", oneRule("rpc: CreateSnapshot", `mutate:
  set:
    snapshot.accessible_topology: '[{"segments": {"zone": "d"}}]'
    snapshot.creation_time: '"2024-01-02T03:04:05Z"'
    snapshot: {snapshot_id: a, size_bytes: 9007199254740993}`), func(t *testing.T, r *rule) {
			want := []Value{
				{Text: `{"size_bytes":9007199254740993,"snapshot_id":"a"}`, Structured: true},
				{Text: `[{"segments": {"zone": "d"}}]`},
				{Text: `"2024-01-02T03:04:05Z"`},
			}
			if len(r.set) != len(want) {
				t.Fatalf("set = %v, want values %v", r.set, want)
			}
			for n, op := range r.set {
				if op.value != want[n] {
					t.Errorf("set[%d] %s = %+v, want %+v", n, op.path.text, op.value, want[n])
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := Parse([]byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs.compiled) != 1 || len(rs.Rules) != 1 {
				t.Fatalf("got %d compiled rules, %d specs, want 1", len(rs.compiled), len(rs.Rules))
			}
			tt.check(t, rs.compiled[0])
		})
	}
}

func TestParseEmpty(t *testing.T) {
	if _, err := Parse([]byte(" \n")); err == nil || !strings.Contains(err.Error(), "empty file") {
		t.Errorf("Parse of blank file: %v, want empty file error", err)
	}
	for _, file := range []string{"rules: []", "rules:", "# no faults\nrules: []"} {
		rs, err := Parse([]byte(file))
		if err != nil || len(rs.compiled) != 0 {
			t.Errorf("Parse(%q) = %d rules, %v; want 0 rules, no error", file, len(rs.compiled), err)
		}
	}
}

// TestReadmeExamples keeps the documented examples loadable.
func TestReadmeExamples(t *testing.T) {
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	if len(blocks) < 3 {
		t.Fatalf("found %d yaml examples in README.md, want at least 3", len(blocks))
	}
	for n, b := range blocks {
		if _, err := Parse([]byte(b[1])); err != nil {
			t.Errorf("README example %d: %v", n+1, err)
		}
	}
}

// TestParseRefusesInapplicableMutate: a clear or set that cannot apply to
// the response of a method the rule matches refuses the file at load,
// naming the rule, the path and the method.
func TestParseRefusesInapplicableMutate(t *testing.T) {
	const prefix = `rules[0] "r": `
	tests := []struct {
		name, rpc, action, want string
	}{
		{"field of another response", "CreateSnapshot", "mutate: {clear: [volume.accessible_topology]}",
			`action.mutate.clear[0]: "volume.accessible_topology" cannot apply to the CreateSnapshot response: csi.v1.CreateSnapshotResponse has no field "volume"`},
		{"unknown field below a message", "CreateSnapshot", "mutate: {clear: [snapshot.bogus]}",
			`action.mutate.clear[0]: "snapshot.bogus" cannot apply to the CreateSnapshot response: csi.v1.Snapshot has no field "bogus"`},
		{"into ListSnapshots entries", "ListSnapshots", "mutate: {clear: [entries.snapshot.accessible_topology]}",
			`action.mutate.clear[0]: "entries.snapshot.accessible_topology" cannot apply to the ListSnapshots response: csi.v1.ListSnapshotsResponse.entries is not a singular message field`},
		{"through a repeated field", "CreateSnapshot", "mutate: {clear: [snapshot.accessible_topology.segments]}",
			`action.mutate.clear[0]: "snapshot.accessible_topology.segments" cannot apply to the CreateSnapshot response: csi.v1.Snapshot.accessible_topology is not a singular message field`},
		{"second clear path", "CreateVolume", "mutate: {clear: [volume, snapshot]}",
			`action.mutate.clear[1]: "snapshot" cannot apply to the CreateVolume response: csi.v1.CreateVolumeResponse has no field "snapshot"`},
		{"glob meeting a response without the field", `"*Snapshot"`, "mutate: {clear: [snapshot.accessible_topology]}",
			`action.mutate.clear[0]: "snapshot.accessible_topology" cannot apply to the DeleteSnapshot response: csi.v1.DeleteSnapshotResponse has no field "snapshot"`},
		{"set into ListSnapshots entries", "ListSnapshots", "mutate: {set: {entries.snapshot.snapshot_id: x}}",
			`action.mutate.set["entries.snapshot.snapshot_id"]: cannot apply to the ListSnapshots response: csi.v1.ListSnapshotsResponse.entries is not a singular message field`},
		{"set value of wrong kind", "CreateSnapshot", "mutate: {set: {snapshot.size_bytes: big}}",
			`action.mutate.set["snapshot.size_bytes"]: cannot apply to the CreateSnapshot response: value "big" for csi.v1.Snapshot.size_bytes (int64): strconv.ParseInt: parsing "big": invalid syntax`},
		{"set scalar from native YAML map", "CreateSnapshot", "mutate: {set: {snapshot.snapshot_id: {a: b}}}",
			`action.mutate.set["snapshot.snapshot_id"]: cannot apply to the CreateSnapshot response: value {"a":"b"} for csi.v1.Snapshot.snapshot_id (string): a YAML list or map only fits a message, repeated or map field`},
		{"set message to plain text", "CreateSnapshot", "mutate: {set: {snapshot: x}}",
			`action.mutate.set["snapshot"]: cannot apply to the CreateSnapshot response: value x for csi.v1.CreateSnapshotResponse.snapshot (csi.v1.Snapshot), decoded as {"snapshot": value}: proto:`},
		{"set repeated field to an object", "CreateSnapshot", `mutate: {set: {snapshot.accessible_topology: '{"segments": {"zone": "d"}}'}}`,
			`action.mutate.set["snapshot.accessible_topology"]: cannot apply to the CreateSnapshot response: value {"segments": {"zone": "d"}} for csi.v1.Snapshot.accessible_topology (repeated csi.v1.Topology), decoded as {"accessibleTopology": value}: proto:`},
		{"set with an unknown JSON field", "CreateSnapshot", `mutate: {set: {snapshot.accessible_topology: '[{"segment": {"zone": "d"}}]'}}`,
			`unknown field "segment"`},
		{"set more than one JSON value", "CreateSnapshot", `mutate: {set: {snapshot.accessible_topology: '[], "snapshotId": "x"'}}`,
			`action.mutate.set["snapshot.accessible_topology"]: cannot apply to the CreateSnapshot response: value [], "snapshotId": "x" for csi.v1.Snapshot.accessible_topology (repeated csi.v1.Topology): not a single JSON value`},
		{"set map of the wrong value type", "CreateVolume", `mutate: {set: {volume.volume_context: '{"a": 1}'}}`,
			`action.mutate.set["volume.volume_context"]: cannot apply to the CreateVolume response: value {"a": 1} for csi.v1.Volume.volume_context (map<string, string>), decoded as {"volumeContext": value}: proto:`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(oneRule("rpc: "+tt.rpc, tt.action)))
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.want)
			}
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error\n %s\nwant %s...%s", err, prefix, tt.want)
			}
		})
	}
}
