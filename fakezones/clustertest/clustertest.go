package clustertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/zonepath/zonepath/fakezones/cluster"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// Cluster is a running test cluster.
type Cluster struct {
	*cluster.State
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// ReadyIn is how long up took.
	ReadyIn time.Duration
}

// BinDir is where the components are: $ZONEPATH_BIN, else the
// repository's bin/ (make build components).
func BinDir(t testing.TB) string {
	if d := os.Getenv("ZONEPATH_BIN"); d != "" {
		return d
	}
	raw, err := exec.Command("go", "env", "GOMOD").Output()
	out := strings.TrimSpace(string(raw))
	if err != nil || out == "" || out == os.DevNull {
		t.Fatalf("ZONEPATH_BIN is not set and the repository root is unknown (%v)", err)
	}
	return filepath.Join(filepath.Dir(out), "bin")
}

// Start brings a cluster up with the given feature gates for zonepath's
// controllers and registers its teardown.
func Start(t testing.TB, f spec.File, gates string) *Cluster {
	t.Helper()
	return start(t, f, gates, "")
}

// StartRBAC is Start with up --rbac rbacDir: deploy components run as
// the ServiceAccounts of that kustomization (deploy/rbac).
func StartRBAC(t testing.TB, f spec.File, gates, rbacDir string) *Cluster {
	t.Helper()
	return start(t, f, gates, rbacDir)
}

func start(t testing.TB, f spec.File, gates, rbacDir string) *Cluster {
	t.Helper()
	cl, err := f.Expand()
	if err != nil {
		t.Fatal(err)
	}
	bin := BinDir(t)
	var out bytes.Buffer
	dir := t.TempDir()
	t0 := time.Now()
	s, err := cluster.Up(context.Background(), cluster.Options{WorkDir: dir, BinDir: bin, CRDDir: filepath.Join(bin, "crds"),
		Cluster: cl, FeatureGates: gates, RBACDir: rbacDir, Timeout: 3 * time.Minute, Out: &out})
	t.Logf("up:\n%s", out.String())
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	c := &Cluster{State: s, ReadyIn: time.Since(t0)}
	t.Cleanup(func() { c.down(t) })
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	c.Kube = kubernetes.NewForConfigOrDie(cfg)
	c.Dynamic = dynamic.NewForConfigOrDie(cfg)
	return c
}

// Log is the tail of a component's log, for failure messages.
func (c *Cluster) Log(component string, lines int) string {
	data, _ := os.ReadFile(filepath.Join(c.WorkDir, "logs", component+".log"))
	all := strings.Split(string(data), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// down stops the cluster and fails the test if anything is left: a
// recorded process, any process naming the work directory (which every
// component's command line does), or the state file.
func (c *Cluster) down(t testing.TB) {
	var out bytes.Buffer
	if err := cluster.Down(context.Background(), c.WorkDir, &out); err != nil {
		t.Errorf("down: %v\n%s", err, out.String())
	}
	if alive := c.Running(); len(alive) > 0 {
		t.Errorf("after down %d processes still run, first %s (pid %d)", len(alive), alive[0].Name, alive[0].PID)
	}
	if left := processesUsing(c.WorkDir); len(left) > 0 {
		t.Errorf("after down these processes still use %s: %v", c.WorkDir, left)
	}
	if st, err := cluster.ReadState(c.WorkDir); err != nil || st != nil {
		t.Errorf("after down the state file is still there (%v)", err)
	}
}

func processesUsing(dir string) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && bytes.Contains(data, []byte(dir)) {
			found = append(found, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return found
}
