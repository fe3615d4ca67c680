package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/zonepath/zonepath/fakezones/cluster"
	"github.com/zonepath/zonepath/fakezones/proc"
)

// Timing of the killer.
const (
	// backTimeout is how long a restarted component may take to serve.
	backTimeout = 90 * time.Second
	// respawnAttempts is how often a component that does not come back
	// is started again before the run gives up on it.
	respawnAttempts = 3
	// minGap is the least time between a component's return and the
	// next kill, so that the cluster gets some work done between kills.
	minGap = 500 * time.Millisecond
	// settleAlive is how long a component without a health check must
	// keep running after its start to count as back.
	settleAlive = time.Second
)

// killer SIGKILLs the victims one at a time, in the schedule's order,
// and starts each again at once: etcd and kube-apiserver must not stay
// down long, as the API server's requests hang without etcd. A kill
// counts once the process is dead and its successor serves: etcd and
// kube-apiserver answer their health checks, the zonepath controller
// its CSI Probe, the others keep running for settleAlive. Between kills
// it restarts whatever died on its own (an Exit), killed or not.
type killer struct {
	state    *cluster.State
	schedule *Schedule
	every    time.Duration
	ledger   *Ledger
	driver   *driver
	log      io.Writer

	mu      sync.Mutex
	started map[string]time.Time
	last    string
}

// run kills until ctx is done, then returns once everything runs; an
// error is a component that would not come back.
func (k *killer) run(ctx context.Context) error {
	for ctx.Err() == nil {
		slot := time.Now()
		name := k.schedule.Next()
		kill, err := k.kill(context.WithoutCancel(ctx), name)
		if err != nil {
			return err
		}
		k.ledger.Kill(kill)
		k.setLast(fmt.Sprintf("%s back in %.1fs", name, kill.Back.Seconds()))
		next := slot.Add(k.every)
		if gap := time.Now().Add(minGap); gap.After(next) {
			next = gap
		}
		if err := k.idle(ctx, next); err != nil {
			return err
		}
	}
	return k.reviveAll(context.WithoutCancel(ctx))
}

// idle waits until next, restarting components that die meanwhile.
func (k *killer) idle(ctx context.Context, next time.Time) error {
	for {
		if err := k.reviveAll(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		wait := time.Until(next)
		if wait <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(wait, 500*time.Millisecond)):
		}
	}
}

// kill kills name and brings it back. A victim that ended on its own
// since the last look (a sidecar exits a moment after the controller it
// talks to was killed) is counted as the exit it is, started again, and
// then killed as scheduled.
func (k *killer) kill(ctx context.Context, name string) (Kill, error) {
	at := time.Now()
	err := k.state.Kill(ctx, name)
	if errors.Is(err, proc.ErrNotRunning) {
		if err := k.reviveAll(ctx); err != nil {
			return Kill{}, err
		}
		at = time.Now()
		err = k.state.Kill(ctx, name)
	}
	if err != nil {
		return Kill{}, fmt.Errorf("killing %s: %w", name, err)
	}
	if err := k.respawn(ctx, name); err != nil {
		return Kill{}, err
	}
	return Kill{Component: name, At: at, Back: time.Since(at)}, nil
}

// reviveAll restarts every component of the cluster that is not running.
func (k *killer) reviveAll(ctx context.Context) error {
	for _, p := range k.state.Processes {
		if p.Alive() {
			continue
		}
		e := exitOf(p.Name, proc.Tail(p.Log, 5))
		k.ledger.Exit(e)
		// The expected exits are counted in the report, not told here.
		if e.Why != lostCSI {
			fmt.Fprintf(k.log, "chaos: %s (pid %d) exited without being killed; restarting it. Its log ends:\n%s\n", p.Name, p.PID, e.Why)
		}
		if err := k.respawn(ctx, p.Name); err != nil {
			return err
		}
	}
	return nil
}

// supervise restarts, until stop is called, whatever exits on its own
// once the kills are over, as kubelet would: a sidecar exits a few
// seconds after the controller it talks to was restarted by the last
// kill, and without it the workload's deletions would wait for nothing.
func (k *killer) supervise(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if err := k.reviveAll(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(k.log, "chaos: restarting a component after the kills failed: %v\n", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// exitOf classifies the exit of component by the end of its log.
func exitOf(component, tail string) Exit {
	e := Exit{Component: component, At: time.Now(), Why: tail}
	if strings.Contains(tail, "Lost connection to CSI driver, exiting") {
		e.Why = lostCSI
	}
	return e
}

// respawn starts name until it serves, up to respawnAttempts times.
func (k *killer) respawn(ctx context.Context, name string) error {
	var last error
	for range respawnAttempts {
		p, err := k.state.Respawn(name)
		if err != nil {
			return err
		}
		k.mu.Lock()
		k.started[name] = time.Now()
		k.mu.Unlock()
		if last = k.back(ctx, p); last == nil {
			return nil
		}
		if ctx.Err() != nil {
			// Stopped (supervise's stop) while it was starting: leave it
			// to start rather than kill what it was asked to bring back.
			return nil
		}
		_ = p.Kill(ctx, 5*time.Second)
	}
	return fmt.Errorf("%s did not come back after %d starts: %w", name, respawnAttempts, last)
}

// back waits until p serves, or fails with its log when it dies first.
func (k *killer) back(ctx context.Context, p *proc.Process) error {
	check := k.check(p.Name)
	t0 := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, backTimeout, true, func(ctx context.Context) (bool, error) {
		if !p.Alive() {
			return false, p.ExitError()
		}
		return check(ctx, t0), nil
	})
	if err != nil {
		return fmt.Errorf("%s: %w; last lines of %s:\n%s", p.Name, err, p.Log, proc.Tail(p.Log, 10))
	}
	return nil
}

// check is the health check of a component.
func (k *killer) check(name string) func(context.Context, time.Time) bool {
	switch name {
	case "etcd", "kube-apiserver":
		return func(ctx context.Context, _ time.Time) bool {
			serving, _ := k.state.Serving(ctx, name)
			return serving
		}
	case "zonepath-controller":
		return func(ctx context.Context, _ time.Time) bool { return k.driver.serving(ctx) }
	default:
		return func(_ context.Context, t0 time.Time) bool { return time.Since(t0) >= settleAlive }
	}
}

// startedSince says whether name was started after t, by this killer.
func (k *killer) startedSince(name string, t time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started[name].After(t)
}

func (k *killer) setLast(s string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last = s
}

// status is what the killer did last, for the progress lines.
func (k *killer) status() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}
