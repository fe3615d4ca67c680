package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/zonepath/zonepath/fakezones/pki"
	"github.com/zonepath/zonepath/fakezones/proc"
)

// marker is the file that makes a directory a cluster work directory, so
// that "up" only ever wipes a directory it made itself.
const marker = ".zonepath-cluster"

// workDir lays out one cluster's files.
type workDir struct {
	dir string
	pki *pki.CA
}

func (w *workDir) path(elem ...string) string {
	return filepath.Join(append([]string{w.dir}, elem...)...)
}

func (w *workDir) log(name string) string { return w.path("logs", name+".log") }

func (w *workDir) kubeconfig(user string) string { return w.path("kubeconfig", user) }

// adminKubeconfig is the kubeconfig printed for the user.
func (w *workDir) adminKubeconfig() string { return w.path("kubeconfig", "admin") }

// statePath is the file that records the running processes.
func (w *workDir) statePath() string { return w.path("cluster.json") }

// reset empties dir for a new cluster: a directory that does not exist,
// is empty, or holds a marker from an earlier cluster; anything else is
// the user's and is refused.
func (w *workDir) reset() error {
	entries, err := os.ReadDir(w.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) > 0:
		if _, err := os.Stat(w.path(marker)); err != nil {
			return fmt.Errorf("work directory %s is not empty and was not made by zonepath-cluster; choose another --work-dir", w.dir)
		}
		if err := os.RemoveAll(w.dir); err != nil {
			return fmt.Errorf("cleaning work directory: %w", err)
		}
	}
	for _, d := range []string{"logs", "kubeconfig", "pki", "csi", "driver"} {
		if err := os.MkdirAll(w.path(d), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(w.path(marker), nil, 0o644)
}

// State is what a running cluster records in its work directory.
type State struct {
	WorkDir    string `json:"workDir"`
	Kubeconfig string `json:"kubeconfig"`
	Server     string `json:"server"`
	// Etcd is etcd's client URL, for its health check after a restart.
	Etcd       string          `json:"etcd"`
	Controller string          `json:"controllerSocket"`
	Processes  []*proc.Process `json:"processes"`
	// ExtraDrivers are the cluster file's extra drivers, as started.
	ExtraDrivers []ExtraDriver `json:"extraDrivers,omitempty"`
	// ZoneKey is the driver's zone key, the label its nodes' zones are in.
	ZoneKey string `json:"zoneKey,omitempty"`
	// DriverFaultRules is the user's fault file (Options.DriverFaultRules),
	// which the zonepath controller re-reads and nothing here writes.
	// Before OutageRules it was also where SetZone wrote, and a cluster
	// started without one had <work-dir>/driver/fault-rules.yaml here
	// (legacyOutageRules).
	DriverFaultRules string `json:"driverFaultRules,omitempty"`
	// OutageRules is the zonepath controller's second fault file, in the
	// work directory, where SetZone writes its outage rules.
	OutageRules string `json:"outageRules,omitempty"`

	// client is Serving's client of the API server.
	clientOnce sync.Once
	client     *http.Client
	clientErr  error
}

// ExtraDriver is an extra driver of a running cluster.
type ExtraDriver struct {
	Name       string   `json:"name"`
	Controller string   `json:"controllerSocket"`
	Disabled   []string `json:"disabledCapabilities,omitempty"`
}

func (w *workDir) writeState(s *State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := w.statePath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, w.statePath())
}

// ReadState reads a cluster's state; a directory without one has no
// cluster (nil, nil).
func ReadState(dir string) (*State, error) {
	w := &workDir{dir: dir}
	data, err := os.ReadFile(w.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("%s: %w", w.statePath(), err)
	}
	return s, nil
}

// Running lists the cluster's processes that still run.
func (s *State) Running() []*proc.Process {
	var alive []*proc.Process
	for _, p := range s.Processes {
		if p.Alive() {
			alive = append(alive, p)
		}
	}
	return alive
}
