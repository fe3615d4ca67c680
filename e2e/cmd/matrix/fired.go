package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/fakezones/cluster"
)

// injectedLine marks the line the driver logs for each fault it injects
// (driver/faults: "Injecting fault" with the rule, the method and the
// rule's file).
const injectedLine = `"Injecting fault"`

var (
	loggedRule   = regexp.MustCompile(`\brule="([^"]*)"`)
	loggedMethod = regexp.MustCompile(`\bmethod="[^"]*/([^"/]*)"`)
	loggedFile   = regexp.MustCompile(`\bfile="([^"]*)"`)
)

// firedFaults are the faults a run injected: by rule name, and by RPC.
type firedFaults struct {
	ByRule, ByRPC map[string]int
}

// countFired reads the controller's log lines of injected faults whose
// file is faultFile.
func countFired(log io.Reader, faultFile string) (firedFaults, error) {
	f := firedFaults{ByRule: map[string]int{}, ByRPC: map[string]int{}}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, injectedLine) {
			continue
		}
		file, rule, method := loggedFile.FindStringSubmatch(line), loggedRule.FindStringSubmatch(line), loggedMethod.FindStringSubmatch(line)
		if file == nil || file[1] != faultFile || rule == nil || method == nil {
			continue
		}
		f.ByRule[rule[1]]++
		f.ByRPC[method[1]]++
	}
	return f, sc.Err()
}

// String is the count by RPC, e.g. "CreateVolume 15, DeleteVolume 16".
func (f firedFaults) String() string {
	var parts []string
	for _, rpc := range slices.Sorted(maps.Keys(f.ByRPC)) {
		parts = append(parts, fmt.Sprintf("%s %d", rpc, f.ByRPC[rpc]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// neverFired are the rpc matches of rules (match.rpc as written) of which
// no rule fired: a personality whose fault file fails an RPC the run never
// makes, or makes too rarely to reach a rule's window, claims a
// behaviour its verdict did not meet. Rules are grouped by match.rpc, so
// a window further on (every fourth call of a hundred) need not fire.
func neverFired(rules *faults.RuleSet, f firedFaults) []string {
	fired := map[string]bool{}
	for _, r := range rules.Rules {
		fired[r.Match.RPC] = fired[r.Match.RPC] || f.ByRule[r.Name] > 0
	}
	var out []string
	for _, rpc := range slices.Sorted(maps.Keys(fired)) {
		if !fired[rpc] && rpc != "" {
			out = append(out, rpc)
		}
	}
	return out
}

// logOffset is the controller log's size now: the faults counted after a
// run are those logged after it.
func logOffset(clusterDir string) int64 {
	st, err := os.Stat(cluster.ControllerLog(clusterDir))
	if err != nil {
		return 0
	}
	return st.Size()
}

// judgeFired counts the faults of faultFile the controller logged after
// offset and says which rpc matches of rules never fired.
func judgeFired(clusterDir, faultFile string, offset int64, rules *faults.RuleSet) (firedFaults, error) {
	log, err := os.Open(cluster.ControllerLog(clusterDir))
	if err != nil {
		return firedFaults{}, err
	}
	defer log.Close()
	if _, err := log.Seek(offset, io.SeekStart); err != nil {
		return firedFaults{}, err
	}
	f, err := countFired(log, faultFile)
	if err != nil {
		return f, err
	}
	if missing := neverFired(rules, f); len(missing) > 0 {
		return f, fmt.Errorf("fault rules for %s never fired during e2e (fired: %s): the run made none of the calls they fail, so it did not test the behaviour the personality claims", strings.Join(missing, ", "), f)
	}
	return f, nil
}
