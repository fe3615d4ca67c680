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
		{"empty action", oneRule(okMatch, "{}"), `action: one of code, delay or mutate is required`},
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
    snapshot.source_volume_id: [a, {b: 9007199254740993}]`), func(t *testing.T, r *rule) {
			want := []Value{
				{Text: `[{"segments": {"zone": "d"}}]`},
				{Text: `"2024-01-02T03:04:05Z"`},
				{Text: `["a",{"b":9007199254740993}]`, Structured: true},
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
