package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// grace is how long a component gets to stop on SIGTERM before SIGKILL.
const grace = 10 * time.Second

// Down stops the cluster in dir, newest process first: the sidecars and
// controllers before the API server and the API server before etcd, which
// it would otherwise wait for. It is safe to run on a stopped cluster.
func Down(ctx context.Context, dir string, out io.Writer) error {
	s, err := ReadState(dir)
	if err != nil || s == nil {
		return err
	}
	return s.stop(ctx, out)
}

func (s *State) stop(ctx context.Context, out io.Writer) error {
	var errs []error
	for i := len(s.Processes) - 1; i >= 0; i-- {
		p := s.Processes[i]
		if !p.Alive() {
			continue
		}
		t0 := time.Now()
		if err := p.Stop(ctx, grace); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(out, "  stopped %-36s %s\n", p.Name, since(t0))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	w := &workDir{dir: s.WorkDir}
	if err := os.Remove(w.statePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func since(t time.Time) string { return fmt.Sprintf("%.2fs", time.Since(t).Seconds()) }
