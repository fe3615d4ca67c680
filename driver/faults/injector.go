package faults

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
)

// Injector holds the active rules of one or more fault files and per-rule
// counters. The zero value and a nil *Injector have no rules and let every
// call through.
type Injector struct {
	nodeSegment map[string]string
	// files is fixed by NewFiles; what each holds is guarded by mu.
	files []*source

	// mu guards the content of every source. A single lock makes rule
	// evaluation and counting for one call atomic with respect to other
	// calls and to a reload, which is what keeps nth/count windows
	// deterministic.
	mu sync.Mutex
}

// source is one fault file: its rules and their counters. Each file is
// read, checked and replaced on its own, so that a tool rewriting its
// own file (zonepath-cluster zone down's outage rules) neither edits the
// user's file nor restarts the nth/count windows of the user's rules.
type source struct {
	path    string
	rules   []*rule
	matched []int // per rule: calls that matched its match block
	fired   []int // per rule: calls it acted on
	loaded  [sha256.Size]byte
}

// RuleStats reports how often a rule matched and fired since its file was
// last (re)loaded with new content, so a test can check that its fault
// really happened.
type RuleStats struct {
	Name    string
	Matched int
	Fired   int
}

// New returns an injector for the fault file at path; "" means no rules.
// nodeSegment is the topology segment of the node the driver runs on,
// used by segment matches for requests without accessibility requirements.
func New(path string, nodeSegment map[string]string) (*Injector, error) {
	return NewFiles([]string{path}, nodeSegment)
}

// NewFiles returns an injector for several fault files, whose rules apply
// in the order of paths, then file order. Empty paths are skipped; a path
// given twice is an error, since one file is one source of rules.
func NewFiles(paths []string, nodeSegment map[string]string) (*Injector, error) {
	i := &Injector{nodeSegment: maps.Clone(nodeSegment)}
	seen := map[string]bool{}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if seen[filepath.Clean(p)] {
			return nil, fmt.Errorf("fault file %s: given twice", p)
		}
		seen[filepath.Clean(p)] = true
		i.files = append(i.files, &source{path: p})
	}
	if err := i.Reload(); err != nil {
		return nil, err
	}
	return i, nil
}

// Files are the paths of the fault files, in the order their rules apply.
func (i *Injector) Files() []string {
	if i == nil {
		return nil
	}
	var out []string
	for _, s := range i.files {
		out = append(out, s.path)
	}
	return out
}

// Reload re-reads every fault file. A file whose content changed gets its
// new rules with counters from zero; one whose content did not keeps its
// rules and counters, as Watch does, so that the two never disagree. On
// error the file's previous rules stay active; the other files still
// reload. Without files it does nothing.
func (i *Injector) Reload() error {
	var errs []error
	for _, s := range i.files {
		data, err := os.ReadFile(s.path)
		if err != nil {
			errs = append(errs, fmt.Errorf("fault file: %w", err))
			continue
		}
		if sha256.Sum256(data) == i.loadedHash(s) {
			continue
		}
		if err := i.load(s, data); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (i *Injector) load(s *source, data []byte) error {
	rs, err := Parse(data)
	if err != nil {
		return fmt.Errorf("fault file %s: %w", s.path, err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	s.rules = rs.compiled
	s.matched = make([]int, len(rs.compiled))
	s.fired = make([]int, len(rs.compiled))
	s.loaded = sha256.Sum256(data)
	return nil
}

func (i *Injector) loadedHash(s *source) [sha256.Size]byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return s.loaded
}

// Stats returns the counters of the active rules in the order they apply:
// the files in the order given, each in file order.
func (i *Injector) Stats() []RuleStats {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	var out []RuleStats
	for _, s := range i.files {
		for idx, r := range s.rules {
			out = append(out, RuleStats{Name: r.name, Matched: s.matched[idx], Fired: s.fired[idx]})
		}
	}
	return out
}

// Watch polls every fault file every interval and reloads the ones whose
// content changed, until ctx is done. Polling a content hash, rather than
// using inotify or mtime, also catches ConfigMap symlink swaps and
// rewrites within the filesystem's timestamp granularity, with no extra
// dependency.
func (i *Injector) Watch(ctx context.Context, interval time.Duration) {
	if len(i.files) == 0 {
		<-ctx.Done()
		return
	}
	loggers := make([]klog.Logger, len(i.files))
	for idx, s := range i.files {
		loggers[idx] = klog.FromContext(ctx).WithValues("file", s.path)
	}
	states := make([]watchState, len(i.files))
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for idx, s := range i.files {
				i.poll(loggers[idx], s, &states[idx])
			}
		}
	}
}

// watchState remembers what was already reported of one file, so that a
// file that stays broken or missing is logged once, not on every tick.
type watchState struct {
	readErr  string
	rejected [sha256.Size]byte
}

func (i *Injector) poll(logger klog.Logger, s *source, w *watchState) {
	data, err := os.ReadFile(s.path)
	if err != nil {
		if err.Error() != w.readErr {
			logger.Error(err, "Cannot read fault file, keeping current rules")
			w.readErr = err.Error()
		}
		return
	}
	w.readErr = ""
	sum := sha256.Sum256(data)
	if sum == i.loadedHash(s) || sum == w.rejected {
		return
	}
	if err := i.load(s, data); err != nil {
		w.rejected = sum
		logger.Error(err, "Rejected fault file, keeping previous rules")
		return
	}
	w.rejected = [sha256.Size]byte{}
	logger.Info("Reloaded fault rules", "rules", i.ruleCount(s))
}

func (i *Injector) ruleCount(s *source) int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(s.rules)
}

// UnaryInterceptor returns a server interceptor that applies the rules.
func (i *Injector) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, hit, file := i.pick(info.FullMethod, req)
		if r == nil {
			return handler(ctx, req)
		}
		klog.FromContext(ctx).V(2).Info("Injecting fault", "rule", r.name, "method", info.FullMethod, "matchedCall", hit, "file", file)
		return r.act(ctx, req, handler)
	}
}

// pick counts the call against every rule it matches and returns the first
// rule whose window contains its count, with that count and its file.
func (i *Injector) pick(fullMethod string, req any) (chosen *rule, hit int, file string) {
	if i == nil {
		return nil, 0, ""
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	for _, s := range i.files {
		for idx, r := range s.rules {
			if !r.matches(fullMethod, req, i.nodeSegment) {
				continue
			}
			s.matched[idx]++
			if chosen == nil && r.inWindow(s.matched[idx]) {
				chosen, hit, file = r, s.matched[idx], s.path
				s.fired[idx]++
			}
		}
	}
	return chosen, hit, file
}
