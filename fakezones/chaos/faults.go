package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/driver/faults"
)

// holdRetries is how many retries after a lost reply fail with
// UNAVAILABLE before reaching the driver, in a scenario with an admin
// edit: with the sidecars' backoff of 1 s doubling, about 7 s in which
// the edit lands before the retry that reaches the driver is built.
const holdRetries = 3

// lostReply are the rules of one scenario: the first call of rpc naming
// object (a path.Match glob over the request's names: the source
// volume's ID for CreateSnapshot, the snapshot's ID for a restore's
// CreateVolume) runs in the driver and its reply is replaced by
// DEADLINE_EXCEEDED (when: after); with hold, the next holdRetries calls
// fail with UNAVAILABLE before reaching it. Both codes are not final for
// the sidecars, so they retry.
func lostReply(scenario, rpc, object string, hold bool) faults.RuleSet {
	rs := faults.RuleSet{Rules: []faults.Rule{{
		Name:   scenario + "-lose-reply",
		Match:  faults.Match{RPC: rpc, Name: object, Nth: 1, Count: 1},
		Action: faults.Action{Code: "DeadlineExceeded", When: faults.WhenAfter, Message: "chaos: the reply of " + rpc + " was lost"},
	}}}
	if hold {
		rs.Rules = append(rs.Rules, faults.Rule{
			Name:   scenario + "-hold-retries",
			Match:  faults.Match{RPC: rpc, Name: object, Nth: 2, Count: holdRetries},
			Action: faults.Action{Code: "Unavailable", Message: "chaos: holding the retry while an admin edits"},
		})
	}
	return rs
}

// faultFile is the zonepath controller's fault rules file (up's
// --driver-fault-rules), which the controller re-reads every second. A
// reload resets every rule's counters, so the file holds one scenario's
// rules at a time: another scenario's reload would lose a reply again.
type faultFile struct {
	path string
	// log is the controller's log, where it says it reloaded the file
	// and which rules fired.
	log string
}

// set replaces the rules, atomically as the driver asks (a torn file is
// refused), and returns the controller log's size before, from which to
// look for the reload and the faults.
func (f *faultFile) set(rs faults.RuleSet) (int64, error) {
	data, err := yaml.Marshal(rs)
	if err != nil {
		return 0, err
	}
	if _, err := faults.Parse(data); err != nil {
		return 0, fmt.Errorf("chaos fault rules: %w", err)
	}
	offset := fileSize(f.log)
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return 0, err
	}
	return offset, os.Rename(tmp, f.path)
}

// clear turns every fault off.
func (f *faultFile) clear() error {
	_, err := f.set(faults.RuleSet{Rules: []faults.Rule{}})
	return err
}

// reloaded waits until the controller log says, after offset, that the
// rules were reloaded, or the controller started since (it reads the file
// at start), which startedAfter reports.
func (f *faultFile) reloaded(ctx context.Context, offset int64, startedAfter func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		n, err := countLines(f.log, offset, func(line string) bool { return strings.Contains(line, `"Reloaded fault rules"`) })
		return err == nil && n > 0 || startedAfter(), nil
	})
}

// fired counts the faults rule injected after offset, as the controller
// logs them (klog V(2), which up runs it at).
func (f *faultFile) fired(offset int64, rule string) int {
	n, _ := countLines(f.log, offset, func(line string) bool {
		return strings.Contains(line, `"Injecting fault"`) && strings.Contains(line, `rule="`+rule+`"`)
	})
	return n
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// countLines counts the lines of path after offset that match.
func countLines(path string, offset int64, match func(string) bool) (int, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer file.Close()
	if _, err := file.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	s := bufio.NewScanner(file)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	n := 0
	for s.Scan() {
		if match(s.Text()) {
			n++
		}
	}
	return n, s.Err()
}
