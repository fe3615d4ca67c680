package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/zonepath/zonepath/fakezones/proc"
)

// killTimeout is how long a SIGKILLed component may take to be gone.
const killTimeout = 5 * time.Second

// Kill SIGKILLs the cluster's component of that name (its whole process
// group), as a crash would end it, and returns once it is gone. It is
// for chaos runs, which then Respawn it; the state file still records the
// dead process, so a down meanwhile skips it.
func (s *State) Kill(ctx context.Context, name string) error {
	p, err := s.Process(name)
	if err != nil {
		return err
	}
	return p.Kill(ctx, killTimeout)
}

// Respawn starts the named component again, with the path, arguments,
// environment and log it was started with, records the new process in
// place of the old one, so that down stops it in the old one's order,
// and returns it. The old process must be gone: two of a component would
// fight over its ports, sockets and data.
func (s *State) Respawn(name string) (*proc.Process, error) {
	old, err := s.Process(name)
	if err != nil {
		return nil, err
	}
	if old.Alive() {
		return nil, fmt.Errorf("%s (pid %d) still runs; kill it first", name, old.PID)
	}
	if old.Path == "" {
		return nil, fmt.Errorf("%s: the state file does not record how it was started (a cluster started by an older zonepath-cluster)", name)
	}
	p, err := proc.Start(old.Spec())
	if err != nil {
		return nil, err
	}
	for i := range s.Processes {
		if s.Processes[i] == old {
			s.Processes[i] = p
		}
	}
	return p, (&workDir{dir: s.WorkDir}).writeState(s)
}

// Process is the cluster's component of that name, as last started.
func (s *State) Process(name string) (*proc.Process, error) {
	for _, p := range s.Processes {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("the cluster has no component %q", name)
}

// Serving says whether the named component answers its health check:
// etcd's /health, kube-apiserver's /readyz. Other components have none
// here: checked is false for them.
func (s *State) Serving(ctx context.Context, name string) (serving, checked bool) {
	switch name {
	case "etcd":
		return httpOK(ctx, http.DefaultClient, s.Etcd+"/health"), true
	case "kube-apiserver":
		client, err := s.apiClient()
		return err == nil && httpOK(ctx, client, s.Server+"/readyz"), true
	}
	return false, false
}

// apiClient is an HTTP client with the admin's credentials, made once.
func (s *State) apiClient() (*http.Client, error) {
	s.clientOnce.Do(func() {
		var cfg *rest.Config
		if cfg, s.clientErr = clientcmd.BuildConfigFromFlags("", s.Kubeconfig); s.clientErr == nil {
			s.client, s.clientErr = rest.HTTPClientFor(cfg)
		}
	})
	return s.client, s.clientErr
}
