package schedbench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/zonepath/zonepath/fakezones/proc"
)

// scheduler is one of the schedulers compared.
type scheduler struct {
	// Binary is its file under the bin directory; it names the scheduler
	// in the table.
	Binary string
	// Plugin enables SnapshotTopology under multiPoint and the
	// VolumeSnapshotTopology gate; otherwise the profile is the default
	// one, as upstream kube-scheduler runs it.
	Plugin bool
}

// both are the two schedulers of issue 14, with the plugin first.
var both = []scheduler{{Binary: "zonepath-scheduler", Plugin: true}, {Binary: "kube-scheduler"}}

// profileName is the schedulerName of its only profile: each phase's
// pods name the scheduler that is meant to schedule them, and the
// cluster's own scheduler leaves them alone.
func (s scheduler) profileName() string { return "schedbench-" + s.Binary }

// pluginConfig enables SnapshotTopology the way the plugin's README
// does: under multiPoint, at every extension point it implements. Its
// place among the Filter plugins (last) does not matter, since its
// PreFilter narrows the nodes to filter (bench/README.md, "Where the
// plugin sits").
const pluginConfig = `  plugins:
    multiPoint:
      enabled:
      - name: SnapshotTopology
`

// configYAML is its KubeSchedulerConfiguration. The client limits are raised
// far above kube-scheduler's defaults (50 QPS), as scheduler_perf does:
// otherwise both schedulers would bind at the rate limiter's pace and the
// comparison would measure the limiter.
func (s scheduler) configYAML(kubeconfig string) string {
	plugins := ""
	if s.Plugin {
		plugins = pluginConfig
	}
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 5000
  burst: 5000
leaderElection:
  leaderElect: false
profiles:
- schedulerName: %s
%s`, kubeconfig, s.profileName(), plugins)
}

// running is a started scheduler process that serves /metrics.
type running struct {
	proc  *proc.Process
	url   string
	https *http.Client
}

// start runs the scheduler from binDir against kubeconfig, with its
// config, certificates and log under dir, and returns when it is ready.
func (s scheduler) start(ctx context.Context, binDir, dir, kubeconfig string) (*running, error) {
	config := filepath.Join(dir, s.Binary+".yaml")
	if err := os.WriteFile(config, []byte(s.configYAML(kubeconfig)), 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{
		"--config=" + config, "--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(dir, s.Binary+"-certs"),
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		// Read the metrics without credentials.
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "--v=1",
	}
	if s.Plugin {
		args = append(args, "--feature-gates=VolumeSnapshotTopology=true")
	}
	p, err := proc.Start(proc.Spec{Name: s.Binary, Path: filepath.Join(binDir, s.Binary), Args: args,
		Log: filepath.Join(dir, s.Binary+".log")})
	if err != nil {
		return nil, err
	}
	r := &running{proc: p, url: fmt.Sprintf("https://127.0.0.1:%d", port), https: &http.Client{
		Timeout: 10 * time.Second,
		// Its certificate is self-signed, in --cert-dir.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}}
	if err := r.waitReady(ctx); err != nil {
		_ = r.stop()
		return nil, err
	}
	return r, nil
}

func (r *running) waitReady(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-r.proc.Exited():
			return false, r.proc.ExitError()
		default:
		}
		resp, err := r.https.Get(r.url + "/readyz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s not ready: %w; last lines of %s:\n%s", r.proc.Name, err, r.proc.Log, proc.Tail(r.proc.Log, 15))
	}
	return nil
}

// latency is the algorithm and the attempt histograms of the pods the
// scheduler scheduled. Every phase runs its own scheduler process with a
// single profile, so the histograms cover exactly that phase.
func (r *running) latency(profile string) (algorithm, attempt histogram, err error) {
	resp, err := r.https.Get(r.url + "/metrics")
	if err != nil {
		return histogram{}, histogram{}, fmt.Errorf("%s metrics: %w", r.proc.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return histogram{}, histogram{}, fmt.Errorf("%s metrics: %s", r.proc.Name, resp.Status)
	}
	families, err := parseMetrics(resp.Body)
	if err != nil {
		return histogram{}, histogram{}, fmt.Errorf("%s metrics: %w", r.proc.Name, err)
	}
	if algorithm, err = readHistogram(families, algorithmMetric, nil); err != nil {
		return histogram{}, histogram{}, err
	}
	attempt, err = readHistogram(families, attemptMetric, map[string]string{"profile": profile, "result": "scheduled"})
	return algorithm, attempt, err
}

func (r *running) stop() error {
	return r.proc.Stop(context.Background(), 10*time.Second)
}

// freePort is a port the kernel just had free.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
