package faults

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

func codeRule(name, code string) string {
	return "rules:\n- {name: " + name + ", match: {rpc: CreateSnapshot}, action: {code: " + code + "}}\n"
}

func callCode(i *Injector) codes.Code {
	_, err := call(context.Background(), i, createSnapshot, nil, &fakeHandler{resp: "ok"})
	return status.Code(err)
}

func TestNoRulesPassThrough(t *testing.T) {
	i, err := New("", map[string]string{"zone": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := i.Reload(); err != nil {
		t.Errorf("Reload without file: %v", err)
	}
	var nilInjector *Injector
	for _, inj := range []*Injector{i, nilInjector, {}} {
		h := &fakeHandler{resp: "ok"}
		resp, err := call(context.Background(), inj, createSnapshot, nil, h)
		if resp != "ok" || err != nil || h.calls.Load() != 1 {
			t.Errorf("got %v, %v, %d handler calls; want pass-through", resp, err, h.calls.Load())
		}
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, codeRule("x", "OK"))
	tests := []struct{ name, path, want string }{
		{"missing file", filepath.Join(dir, "missing.yaml"), "no such file"},
		{"invalid file", bad, "fault file " + bad + `: rules[0] "x": action.code: "OK" is not a fault`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, err := New(tt.path, nil)
			if i != nil || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, %v; want error containing %q", i, err, tt.want)
			}
		})
	}
}

func TestReload(t *testing.T) {
	i, path := newInjector(t, codeRule("old", "Unavailable"), nil)
	if got := callCode(i); got != codes.Unavailable {
		t.Fatalf("before reload: %v, want Unavailable", got)
	}

	writeFile(t, path, codeRule("broken", "Bogus"))
	err := i.Reload()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `rules[0] "broken": action.code`) {
		t.Fatalf("Reload of bad file = %v, want error naming file, rule and field", err)
	}
	if got := callCode(i); got != codes.Unavailable {
		t.Errorf("after failed reload: %v, want old rule's Unavailable", got)
	}
	if got := i.Stats(); len(got) != 1 || got[0] != (RuleStats{"old", 2, 2}) {
		t.Errorf("failed reload changed stats: %+v", got)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := i.Reload(); err == nil {
		t.Error("Reload of missing file succeeded")
	}

	writeFile(t, path, codeRule("new", "Aborted"))
	if err := i.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := i.Stats(); len(got) != 1 || got[0] != (RuleStats{Name: "new"}) {
		t.Errorf("stats after reload = %+v, want fresh counters", got)
	}
	if got := callCode(i); got != codes.Aborted {
		t.Errorf("after reload: %v, want Aborted", got)
	}
}

// replaceFile atomically replaces path, as a ConfigMap update does, so the
// watcher never sees a half-written file.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	writeFile(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWatch(t *testing.T) {
	i, path := newInjector(t, codeRule("old", "Unavailable"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		i.Watch(ctx, 10*time.Millisecond)
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Watch did not return after cancel")
		}
	}()

	replaceFile(t, path, codeRule("broken", "OK"))
	time.Sleep(50 * time.Millisecond)
	if got := callCode(i); got != codes.Unavailable {
		t.Fatalf("bad file replaced rules: %v", got)
	}

	replaceFile(t, path, codeRule("new", "Aborted"))
	loaded := func(context.Context) (bool, error) {
		s := i.Stats()
		return len(s) == 1 && s[0].Name == "new", nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 5*time.Second, true, loaded); err != nil {
		t.Fatalf("Watch did not load the rewritten file: %v", err)
	}
	if got := callCode(i); got != codes.Aborted {
		t.Errorf("after watch reload: %v, want Aborted", got)
	}
}

// TestPoll drives single Watch iterations, so that "nothing happened"
// outcomes are checked deterministically rather than by sleeping.
func TestPoll(t *testing.T) {
	i, path := newInjector(t, codeRule("old", "Unavailable"), nil)
	var w watchState
	ctx, logs := logContext(t)
	poll := func() { i.poll(klog.FromContext(ctx), i.files[0], &w) }
	callCode(i)
	want := func(step string, stats RuleStats) {
		t.Helper()
		if got := i.Stats(); len(got) != 1 || got[0] != stats {
			t.Errorf("%s: stats = %+v, want %+v", step, got, stats)
		}
	}

	replaceFile(t, path, codeRule("old", "Unavailable"))
	poll()
	want("identical rewrite", RuleStats{"old", 1, 1})

	replaceFile(t, path, codeRule("broken", "OK"))
	poll()
	poll()
	want("bad rewrite", RuleStats{"old", 1, 1})
	if n := strings.Count(logs(), "Rejected fault file"); n != 1 || !strings.Contains(logs(), `\"OK\" is not a fault`) {
		t.Errorf("bad file logged %d times over two polls, want once with the reason:\n%s", n, logs())
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	poll()
	poll()
	want("missing file", RuleStats{"old", 1, 1})
	if n := strings.Count(logs(), "Cannot read fault file"); n != 1 {
		t.Errorf("missing file logged %d times over two polls, want once:\n%s", n, logs())
	}

	replaceFile(t, path, codeRule("new", "Aborted"))
	poll()
	want("good rewrite", RuleStats{Name: "new"})
	if w.readErr != "" || w.rejected != ([32]byte{}) {
		t.Errorf("watch state not reset after a good load: %+v", w)
	}
}

func TestWatchWithoutFileReturnsOnCancel(t *testing.T) {
	i, err := New("", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	i.Watch(ctx, time.Millisecond) // must return, or the test times out
}

// TestConcurrentCount checks that counters are exact under concurrency.
func TestConcurrentCount(t *testing.T) {
	i, _ := newInjector(t, oneRule("rpc: CreateSnapshot\nnth: 3\ncount: 5", "code: Unavailable"), nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	faults := 0
	for range 20 {
		wg.Go(func() {
			for range 10 {
				if callCode(i) == codes.Unavailable {
					mu.Lock()
					faults++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if faults != 5 {
		t.Errorf("%d faults, want exactly 5", faults)
	}
	if got := i.Stats()[0]; got != (RuleStats{"r", 200, 5}) {
		t.Errorf("stats = %+v", got)
	}
}

// TestOutageFileKeepsOtherFilesCounters: a rule meant for "the first two
// CreateSnapshot calls" must not fire again when a zone goes down and up
// mid-run. With the outage rule written into the rule's own file (what
// zonepath-cluster zone down did) every rewrite restarts the window, and
// the rule fires again; with the outage in a file of its own (NewFiles)
// the rule keeps its counters, since its own file did not change.
func TestOutageFileKeepsOtherFilesCounters(t *testing.T) {
	const userRule = "- {name: first-two, match: {rpc: CreateSnapshot, count: 2}, action: {code: Unavailable}}\n"
	const outageRule = "- {name: zone-b-down, match: {segment: {zone: zone-b}}, action: {outage: true}}\n"
	zoneB := map[string]string{"zone": "zone-b"}
	tests := []struct {
		name        string
		ownFile     bool // the outage rule goes in a file of its own
		wantAfter   codes.Code
		wantMatched int
		wantFired   int
	}{
		{name: "outage written into the user's file", wantAfter: codes.Unavailable, wantMatched: 1, wantFired: 1},
		{name: "outage in its own file", ownFile: true, wantAfter: codes.OK, wantMatched: 4, wantFired: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			user, outage := filepath.Join(dir, "user.yaml"), filepath.Join(dir, "outage.yaml")
			writeFile(t, user, "rules:\n"+userRule)
			writeFile(t, outage, "rules: []\n")
			paths := []string{user}
			if tt.ownFile {
				paths = append(paths, outage)
			}
			i, err := NewFiles(paths, nil)
			if err != nil {
				t.Fatal(err)
			}
			// setZone takes zone-b down or up the way each layout allows.
			setZone := func(down bool) {
				target, rules := user, map[bool]string{true: "rules:\n" + userRule + outageRule, false: "rules:\n" + userRule}[down]
				if tt.ownFile {
					target, rules = outage, map[bool]string{true: "rules:\n" + outageRule, false: "rules: []\n"}[down]
				}
				replaceFile(t, target, rules)
				if err := i.Reload(); err != nil {
					t.Fatal(err)
				}
				if i.Down(zoneB) != down {
					t.Fatalf("zone-b down = %v after setting it %v", !down, down)
				}
			}
			for n := range 2 {
				if got := callCode(i); got != codes.Unavailable {
					t.Fatalf("call %d: %v, want the rule's Unavailable", n+1, got)
				}
			}
			setZone(true)
			got := callCode(i)
			setZone(false)
			callCode(i)
			if got != tt.wantAfter {
				t.Errorf("third CreateSnapshot, with zone-b down: %v, want %v", got, tt.wantAfter)
			}
			if s := i.Stats()[0]; s != (RuleStats{"first-two", tt.wantMatched, tt.wantFired}) {
				t.Errorf("stats after zone-b went down and up: %+v, want matched %d, fired %d", s, tt.wantMatched, tt.wantFired)
			}
		})
	}
}

// TestNewFiles: empty paths are skipped, a file given twice is refused,
// and a broken file neither stops the others from reloading nor loses
// its own rules.
func TestNewFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	writeFile(t, a, codeRule("a", "Unavailable"))
	writeFile(t, b, "rules: []\n")
	if _, err := NewFiles([]string{a, dir + "/./a.yaml"}, nil); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("the same file twice: %v, want it refused", err)
	}
	i, err := NewFiles([]string{"", a, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := i.Files(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("Files() = %v, want [%s %s]", got, a, b)
	}
	writeFile(t, a, codeRule("broken", "OK"))
	writeFile(t, b, codeRule("b", "Aborted"))
	if err := i.Reload(); err == nil || !strings.Contains(err.Error(), a) {
		t.Errorf("Reload with %s broken: %v, want an error naming it", a, err)
	}
	if got := i.Stats(); len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Errorf("rules after a partial reload: %+v, want a's old rule and b's new one", got)
	}
}
