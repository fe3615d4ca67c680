package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/fakezones/kubelet"
	"github.com/zonepath/zonepath/fakezones/objects"
	"github.com/zonepath/zonepath/fakezones/pki"
	"github.com/zonepath/zonepath/fakezones/proc"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// Options configure Up.
type Options struct {
	// WorkDir holds everything of the cluster: logs, kubeconfigs,
	// certificates, etcd data, sockets.
	WorkDir string
	// BinDir holds the components (make components, make build).
	BinDir string
	// CRDDir holds the snapshot CRDs to install.
	CRDDir  string
	Cluster *spec.Cluster
	// FeatureGates is passed to zonepath's own controllers.
	FeatureGates string
	// DriverFaultRules, when set, is the fault rules file (driver/faults)
	// of the zonepath controller, re-read when it changes: a driver that
	// breaks a rule on purpose, to prove a test catches it.
	DriverFaultRules string
	// RBACDir, when set, is a kustomization (deploy/rbac) whose
	// ServiceAccounts and roles are applied right after kube-apiserver is
	// ready; snapshot-controller, every driver's sidecars and
	// zonepath-scheduler then run as those ServiceAccounts, with leader
	// election in Namespace, and the API server writes an audit log of
	// their calls (AuditLog).
	RBACDir string
	// MaxBackoff, when set, is the longest the snapshot-controller and the
	// sidecars wait before trying again: their --retry-interval-max
	// (upstream 5m; every failed call doubles an object's backoff) and the
	// provisioner's --snapshot-orphan-sweep-interval (upstream 5m; the
	// sweep takes the source-protection finalizer off a VolumeSnapshot
	// whose restoring claim went away). A chaos run's kills would
	// otherwise leave objects waiting longer than the run.
	MaxBackoff time.Duration
	// Timeout bounds the whole start.
	Timeout time.Duration
	Out     io.Writer
}

type ports struct{ etcd, etcdPeer, apiserver int }

type up struct {
	o    Options
	crds []*apiextensionsv1.CustomResourceDefinition
	// rbac is the rendered Options.RBACDir; nil without --rbac.
	rbac    []*unstructured.Unstructured
	w       *workDir
	ports   ports
	etcdURL string
	state   *State
	clients objects.Clients
	config  *rest.Config
	current stepProgress
}

// newState is the state of the cluster up starts, before its processes.
func (u *up) newState() *State {
	return &State{WorkDir: u.o.WorkDir, Kubeconfig: u.w.adminKubeconfig(), Controller: u.controllerSocket(), ZoneKey: u.o.Cluster.Keys.Zone,
		DriverFaultRules: u.o.DriverFaultRules, OutageRules: u.outageRules()}
}

// Up starts a cluster and returns when it is ready: nodes Ready, node
// plugins registered, classes installed. On failure or cancellation it
// stops whatever it had started before returning.
func Up(ctx context.Context, o Options) (s *State, err error) {
	t0 := time.Now()
	u := &up{o: o, w: &workDir{dir: o.WorkDir}}
	if err := u.check(); err != nil {
		return nil, err
	}
	if old, err := ReadState(o.WorkDir); err != nil {
		return nil, err
	} else if old != nil && len(old.Running()) > 0 {
		return nil, fmt.Errorf("a cluster is running in %s (%d processes); run down first", o.WorkDir, len(old.Running()))
	}
	if err := u.w.reset(); err != nil {
		return nil, err
	}
	if err := u.faultFile(); err != nil {
		return nil, err
	}
	u.state = u.newState()
	for i, d := range o.Cluster.ExtraDrivers {
		u.state.ExtraDrivers = append(u.state.ExtraDrivers, ExtraDriver{
			Name: d.Name, Controller: extraControllerSocket(o.WorkDir, i), Disabled: d.DisableCapabilities})
	}
	defer func() {
		if err != nil {
			fmt.Fprintf(o.Out, "start failed, stopping what was started (logs stay in %s)\n", u.w.path("logs"))
			_ = u.state.stop(context.Background(), o.Out)
		}
	}()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	for _, st := range u.steps() {
		if err := u.step(ctx, st.what, st.run); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(o.Out, "cluster ready in %s\n", since(t0))
	fmt.Fprintln(o.Out, u.state.PeakMemory().String(len(o.Cluster.Nodes)))
	return u.state, nil
}

type step struct {
	what string
	run  func(context.Context) error
}

// steps are the start's steps in order; --rbac adds its objects between
// kube-apiserver and the components that run under them.
func (u *up) steps() []step {
	steps := []step{
		{"certificates and kubeconfigs", u.credentials},
		{"etcd", u.startEtcd},
		{"kube-apiserver", u.startAPIServer},
	}
	if u.rbac != nil {
		steps = append(steps, step{"ServiceAccounts and roles of " + filepath.Base(u.o.RBACDir), u.applyRBAC})
	}
	return append(steps,
		step{"controllers, kwok, sidecars, zonepath", u.startRest},
		step{fmt.Sprintf("CRDs, classes, %d nodes in %d zones", len(u.o.Cluster.Nodes), u.o.Cluster.Zones), u.objectsAndNodes},
		step{"nodes Ready, node plugins registered", u.ready},
	)
}

func (u *up) step(ctx context.Context, what string, run func(context.Context) error) error {
	t0 := time.Now()
	u.current = stepProgress{what: what, start: t0, last: t0}
	fmt.Fprintf(u.o.Out, "  %-44s ", what)
	err := run(ctx)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if u.current.printed {
		// Progress lines broke the step's line: name it again.
		fmt.Fprintf(u.o.Out, "  %-44s ", what)
	}
	if err != nil {
		fmt.Fprintf(u.o.Out, "failed after %s\n", since(t0))
		return fmt.Errorf("%s: %w", what, err)
	}
	fmt.Fprintf(u.o.Out, "%s\n", since(t0))
	return nil
}

// stepProgress is what the running step has said of its progress.
type stepProgress struct {
	what        string
	start, last time.Time
	said        string
	printed     bool
}

// progressEvery is how often a long step says how far it is, so that a
// start of thousands of nodes does not leave a silent terminal.
const progressEvery = 2 * time.Second

// progress prints the running step's progress, at most every
// progressEvery and only when it changed.
func (u *up) progress(msg string) {
	p := &u.current
	if time.Since(p.last) < progressEvery || msg == p.said {
		return
	}
	if !p.printed {
		fmt.Fprintln(u.o.Out)
	}
	fmt.Fprintf(u.o.Out, "    %6s  %s\n", since(p.start), msg)
	p.last, p.said, p.printed = time.Now(), msg, true
}

func (u *up) credentials(context.Context) error {
	var err error
	if u.ports, err = freePorts(); err != nil {
		return err
	}
	u.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", u.ports.etcd)
	u.state.Etcd = u.etcdURL
	u.state.Server = fmt.Sprintf("https://127.0.0.1:%d", u.ports.apiserver)
	ca, err := pki.NewCA(u.w.path("pki"), "fakezones-ca")
	if err != nil {
		return err
	}
	u.w.pki = ca
	if err := ca.Serving("apiserver", "127.0.0.1", "localhost", "kubernetes", "kubernetes.default.svc"); err != nil {
		return err
	}
	if err := ca.ServiceAccountKey("service-account"); err != nil {
		return err
	}
	for user, id := range map[string][2]string{
		"admin":                   {"fakezones-admin", "system:masters"},
		"kube-controller-manager": {"system:kube-controller-manager", ""},
		"kube-scheduler":          {objects.SchedulerUser, ""},
	} {
		var groups []string
		if id[1] != "" {
			groups = []string{id[1]}
		}
		if err := ca.Client(user, id[0], groups...); err != nil {
			return err
		}
		if err := ca.Kubeconfig(u.w.kubeconfig(user), u.state.Server, user); err != nil {
			return err
		}
	}
	return u.serviceAccountCredentials()
}

// start starts c and records it before anything else can fail.
func (u *up) start(c component) (*proc.Process, error) {
	p, err := proc.Start(u.spec(c))
	if err != nil {
		return nil, err
	}
	u.state.Processes = append(u.state.Processes, p)
	return p, u.w.writeState(u.state)
}

func (u *up) startEtcd(ctx context.Context) error {
	p, err := u.start(u.etcd())
	if err != nil {
		return err
	}
	return u.waitFor(ctx, []*proc.Process{p}, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, http.DefaultClient, u.etcdURL+"/health"), nil
	})
}

func (u *up) startAPIServer(ctx context.Context) error {
	c, err := u.apiserver()
	if err != nil {
		return err
	}
	p, err := u.start(c)
	if err != nil {
		return err
	}
	if err := u.connect(); err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(u.config)
	if err != nil {
		return err
	}
	return u.waitFor(ctx, []*proc.Process{p}, func(ctx context.Context) (bool, error) {
		return httpOK(ctx, client, u.state.Server+"/readyz"), nil
	})
}

func (u *up) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", u.w.adminKubeconfig())
	if err != nil {
		return err
	}
	// Creating hundreds of nodes and CSINodes is the start's critical
	// path; client-side throttling would only slow it.
	cfg.QPS, cfg.Burst = 1000, 2000
	u.config = cfg
	if u.clients.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if u.clients.Extensions, err = apiextensions.NewForConfig(cfg); err != nil {
		return err
	}
	u.clients.Dynamic, err = dynamic.NewForConfig(cfg)
	return err
}

func httpOK(ctx context.Context, client *http.Client, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// startRest starts every component that only needs the API server; each
// retries until the objects it needs appear.
func (u *up) startRest(context.Context) error {
	if err := u.writeConfigs(); err != nil {
		return err
	}
	sched, err := u.scheduler()
	if err != nil {
		return err
	}
	all := append([]component{u.controllerManager(), sched, u.kwok(), u.snapshotController(), u.driverController()}, u.sidecars()...)
	all = append(all, u.extraDrivers()...)
	for _, c := range append(all, u.kubeletStandIn()) {
		if _, err := u.start(c); err != nil {
			return err
		}
	}
	return nil
}

// writeExtraTopologies writes each extra driver's topology file, the
// main one with its own settings (extraTopologyFile).
func (u *up) writeExtraTopologies() error {
	for _, d := range u.o.Cluster.ExtraDrivers {
		topo, err := u.o.Cluster.ExtraDriverTopologyYAML(d)
		if err != nil {
			return err
		}
		path := extraTopologyFile(u.w.dir, d.Name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, topo, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// extraTopologyFile is the topology file of the extra driver name.
func extraTopologyFile(workDir, name string) string {
	return filepath.Join(kubelet.ExtraDriverDir(workDir, name), "topology.yaml")
}

// writeConfigs writes the driver's topology file and kwok's stages.
func (u *up) writeConfigs() error {
	topo, err := u.o.Cluster.DriverTopologyYAML()
	if err != nil {
		return err
	}
	if err := os.WriteFile(u.w.path("driver", "topology.yaml"), topo, 0o644); err != nil {
		return err
	}
	if err := u.writeExtraTopologies(); err != nil {
		return err
	}
	if err := os.WriteFile(u.w.path("cluster.yaml"), mustYAML(u.o.Cluster.File), 0o644); err != nil {
		return err
	}
	return os.WriteFile(u.w.path("kwok.yaml"), []byte(kwokStages()), 0o644)
}

func mustYAML(v any) []byte {
	data, err := yaml.Marshal(v)
	if err != nil {
		panic(err) // a plain struct always marshals
	}
	return data
}

func (u *up) install(ctx context.Context) error {
	// deploy/rbac grants zonepath-scheduler's reads with --rbac.
	if u.rbac == nil {
		if err := objects.InstallRBAC(ctx, u.clients); err != nil {
			return err
		}
	}
	// The controller manager creates it too, once it has started and
	// synced: seconds a test would wait for before it may create a pod.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}}
	if _, err := u.clients.Kube.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default service account: %w", err)
	}
	if err := objects.InstallCRDs(ctx, u.clients, u.crds); err != nil {
		return err
	}
	if err := objects.InstallStorage(ctx, u.clients, u.o.Cluster); err != nil {
		return err
	}
	return objects.InstallSnapshotClasses(ctx, u.clients, u.o.Cluster)
}

// objectsAndNodes installs the objects while it creates the nodes: kwok
// and the kubelet stand-in take the nodes up while the API server
// establishes the CRDs, and the CRDs are there within seconds whatever
// the node count (snapshot-controller gives up on them after 30 s).
func (u *up) objectsAndNodes(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return u.install(ctx) })
	g.Go(func() error { return u.nodes(ctx) })
	return g.Wait()
}

func (u *up) nodes(ctx context.Context) error {
	return objects.CreateNodes(ctx, u.clients, u.o.Cluster, func(created int) {
		u.progress(fmt.Sprintf("%d of %d nodes created", created, len(u.o.Cluster.Nodes)))
	})
}

// waitFor polls cond until it holds, failing at once with the log of any
// of procs that exits meanwhile.
func (u *up) waitFor(ctx context.Context, procs []*proc.Process, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			select {
			case <-p.Exited():
				return false, p.ExitError()
			default:
			}
		}
		return cond(ctx)
	})
}

// Summary describes a ready cluster for the user.
func (s *State) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kubeconfig:  %s\n", s.Kubeconfig)
	fmt.Fprintf(&b, "API server:  %s\n", s.Server)
	fmt.Fprintf(&b, "CSI driver:  %s (controller)\n", s.Controller)
	for _, d := range s.ExtraDrivers {
		disabled := ""
		if len(d.Disabled) > 0 {
			disabled = ", without " + strings.Join(d.Disabled, ", ")
		}
		fmt.Fprintf(&b, "CSI driver:  %s (controller of %s%s)\n", d.Controller, d.Name, disabled)
	}
	fmt.Fprintf(&b, "logs:        %s\n", (&workDir{dir: s.WorkDir}).path("logs"))
	zoneKey := s.ZoneKey
	if zoneKey == "" {
		zoneKey = world.DefaultZoneKey // a state written before the key was recorded
	}
	fmt.Fprintf(&b, "try:         kubectl --kubeconfig %s get nodes -L %s\n", s.Kubeconfig, zoneKey)
	return b.String()
}
