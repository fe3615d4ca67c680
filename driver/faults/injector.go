package faults

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
)

// Injector holds the active rules and per-rule counters. The zero value and
// a nil *Injector have no rules and let every call through.
type Injector struct {
	path        string
	nodeSegment map[string]string

	// mu guards everything below. A single lock makes rule evaluation and
	// counting for one call atomic with respect to other calls and to a
	// reload, which is what keeps nth/count windows deterministic.
	mu      sync.Mutex
	rules   []*rule
	matched []int // per rule: calls that matched its match block
	fired   []int // per rule: calls it acted on
	loaded  [sha256.Size]byte
}

// RuleStats reports how often a rule matched and fired since the last
// successful (re)load, so a test can check that its fault really happened.
type RuleStats struct {
	Name    string
	Matched int
	Fired   int
}

// New returns an injector for the fault file at path; "" means no rules.
// nodeSegment is the topology segment of the node the driver runs on,
// used by segment matches for requests without accessibility requirements.
func New(path string, nodeSegment map[string]string) (*Injector, error) {
	i := &Injector{path: path, nodeSegment: maps.Clone(nodeSegment)}
	if err := i.Reload(); err != nil {
		return nil, err
	}
	return i, nil
}

// Reload re-reads the fault file. On error the previous rules stay active;
// on success counters start again from zero. Without a file it does nothing.
func (i *Injector) Reload() error {
	if i.path == "" {
		return nil
	}
	data, err := os.ReadFile(i.path)
	if err != nil {
		return fmt.Errorf("fault file: %w", err)
	}
	return i.load(data)
}

func (i *Injector) load(data []byte) error {
	rs, err := Parse(data)
	if err != nil {
		return fmt.Errorf("fault file %s: %w", i.path, err)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.rules = rs.compiled
	i.matched = make([]int, len(rs.compiled))
	i.fired = make([]int, len(rs.compiled))
	i.loaded = sha256.Sum256(data)
	return nil
}

func (i *Injector) loadedHash() [sha256.Size]byte {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.loaded
}

// Stats returns the counters of the active rules in file order.
func (i *Injector) Stats() []RuleStats {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	out := make([]RuleStats, len(i.rules))
	for idx, r := range i.rules {
		out[idx] = RuleStats{Name: r.name, Matched: i.matched[idx], Fired: i.fired[idx]}
	}
	return out
}

// Watch polls the fault file every interval and reloads it when its content
// changes, until ctx is done. Polling a content hash, rather than using
// inotify or mtime, also catches ConfigMap symlink swaps and rewrites
// within the filesystem's timestamp granularity, with no extra dependency.
func (i *Injector) Watch(ctx context.Context, interval time.Duration) {
	if i.path == "" {
		<-ctx.Done()
		return
	}
	logger := klog.FromContext(ctx).WithValues("file", i.path)
	t := time.NewTicker(interval)
	defer t.Stop()
	var w watchState
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			i.poll(logger, &w)
		}
	}
}

// watchState remembers what was already reported so that a file that stays
// broken or missing is logged once, not on every tick.
type watchState struct {
	readErr  string
	rejected [sha256.Size]byte
}

func (i *Injector) poll(logger klog.Logger, w *watchState) {
	data, err := os.ReadFile(i.path)
	if err != nil {
		if err.Error() != w.readErr {
			logger.Error(err, "Cannot read fault file, keeping current rules")
			w.readErr = err.Error()
		}
		return
	}
	w.readErr = ""
	sum := sha256.Sum256(data)
	if sum == i.loadedHash() || sum == w.rejected {
		return
	}
	if err := i.load(data); err != nil {
		w.rejected = sum
		logger.Error(err, "Rejected fault file, keeping previous rules")
		return
	}
	w.rejected = [sha256.Size]byte{}
	logger.Info("Reloaded fault rules", "rules", len(i.Stats()))
}

// UnaryInterceptor returns a server interceptor that applies the rules.
func (i *Injector) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, hit := i.pick(info.FullMethod, req)
		if r == nil {
			return handler(ctx, req)
		}
		klog.FromContext(ctx).V(2).Info("Injecting fault", "rule", r.name, "method", info.FullMethod, "matchedCall", hit)
		return r.act(ctx, req, handler)
	}
}

// pick counts the call against every rule it matches and returns the first
// rule whose window contains its count, with that count.
func (i *Injector) pick(fullMethod string, req any) (*rule, int) {
	if i == nil {
		return nil, 0
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	var chosen *rule
	hit := 0
	for idx, r := range i.rules {
		if !r.matches(fullMethod, req, i.nodeSegment) {
			continue
		}
		i.matched[idx]++
		if chosen == nil && r.inWindow(i.matched[idx]) {
			chosen, hit = r, i.matched[idx]
			i.fired[idx]++
		}
	}
	return chosen, hit
}
