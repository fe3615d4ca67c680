package kubelet

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// NodeIDAnnotation is where kubelet records the node IDs of CSI drivers.
const NodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"

// Config is what the stand-in needs.
type Config struct {
	Cluster  *spec.Cluster
	Topology *world.Topology
	Kube     kubernetes.Interface
	// WorkDir holds node plugin sockets and state.
	WorkDir string
	// DataDir is the controller's data directory, which node plugins share.
	DataDir string
}

// SocketPath is the node plugin socket of node under workDir.
func SocketPath(workDir, node string) string {
	return filepath.Join(socketDir(workDir), node+".sock")
}

// socketDir holds zonepath's node plugin sockets.
func socketDir(workDir string) string { return filepath.Join(workDir, "csi", "nodes") }

// ExtraDriverDir holds an extra driver's controller state and data and
// its node plugins' state under workDir, apart from every other driver's.
func ExtraDriverDir(workDir, name string) string { return filepath.Join(workDir, "drivers", name) }

// ExtraSocketDir holds the sockets of the i-th extra driver (its
// controller's, and its node plugins' under nodes/). It is numbered, not
// named after the driver, because a unix socket's path is limited to
// MaxSocketPath bytes.
func ExtraSocketDir(workDir string, i int) string {
	return filepath.Join(workDir, "csi", fmt.Sprintf("extra%d", i+1))
}

// MaxSocketPath is the longest path a unix socket may have on Linux
// (sun_path is 108 bytes, with the terminating NUL).
const MaxSocketPath = 107

// Driver is one CSI driver whose node plugins the stand-in serves.
type Driver struct {
	Name string
	// Disable are the capabilities its plugins do not advertise.
	Disable []string
	// TerseErrors: its plugins' errors say only their code's meaning,
	// whatever the shared topology says (spec.ExtraDriver.TerseErrors).
	TerseErrors bool
	// SocketDir holds its node plugins' sockets and StateDir their state
	// databases, one per node; DataDir is its controller's data
	// directory, which they share.
	SocketDir, StateDir, DataDir string
}

func (d Driver) socket(node string) string { return filepath.Join(d.SocketDir, node+".sock") }

// topology is the driver's view of the cluster's topology: shared,
// unless the driver has settings of its own.
func (d Driver) topology(shared *world.Topology) *world.Topology {
	if !d.TerseErrors || shared.TerseErrors {
		return shared
	}
	own := *shared
	own.TerseErrors = true
	return &own
}

// Drivers lays out the cluster's drivers: zonepath's (its data in
// cfg.DataDir, sockets where SocketPath says), then every extra driver
// under ExtraDriverDir and ExtraSocketDir.
func (cfg Config) Drivers() []Driver {
	out := []Driver{{
		Name:      plugin.DefaultName,
		SocketDir: socketDir(cfg.WorkDir), StateDir: filepath.Join(cfg.WorkDir, "nodes"), DataDir: cfg.DataDir,
	}}
	for i, e := range cfg.Cluster.ExtraDrivers {
		dir := ExtraDriverDir(cfg.WorkDir, e.Name)
		out = append(out, Driver{Name: e.Name, Disable: e.DisableCapabilities, TerseErrors: e.TerseErrors,
			SocketDir: filepath.Join(ExtraSocketDir(cfg.WorkDir, i), "nodes"), StateDir: filepath.Join(dir, "node-state"), DataDir: filepath.Join(dir, "data")})
	}
	return out
}

// Run serves every node plugin and registers it, until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	logger := klog.FromContext(ctx)
	var names, followed []string
	for _, n := range cfg.Cluster.Nodes {
		names = append(names, n.Name)
		if n.Registration == spec.OnLabel {
			followed = append(followed, n.Name)
		}
	}
	w, stopWatch, err := watchNodes(ctx, cfg.Kube, names, followed)
	if err != nil {
		return err
	}
	defer stopWatch()
	s := &standIn{cfg: cfg, nodes: w, plugins: newPluginHost(ctx, cfg.Cluster)}
	defer s.plugins.close()
	// Followers of a registration label run until ctx is done; Run waits
	// for them before closing the plugins they call.
	var followers sync.WaitGroup
	defer followers.Wait()
	for _, n := range cfg.Cluster.Nodes {
		if n.Registration == spec.OnLabel {
			followers.Go(func() {
				if err := s.followLabel(ctx, n); err != nil && ctx.Err() == nil {
					logger.Error(err, "Following the registration label failed", "node", n.Name)
				}
			})
		}
	}
	// Nodes register while the plugins open, each once its own serve; a
	// plugin that fails to open ends the registrations.
	t0 := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := s.plugins.start(cfg); err != nil {
			return err
		}
		logger.Info("Node plugins serving", "took", time.Since(t0))
		return nil
	})
	g.Go(func() error { return s.registerAll(gctx) })
	if err := g.Wait(); err != nil {
		return err
	}
	logger.Info("All node plugins registered at start", "nodes", len(cfg.Cluster.Nodes), "took", time.Since(t0))
	<-ctx.Done()
	return nil
}

// standIn is a running stand-in: its view of the Nodes and its plugins.
type standIn struct {
	cfg     Config
	nodes   *nodeWatch
	plugins *pluginHost
}

// registrations is how many nodes register at once: each waits for its
// Node, then makes one or two API calls; more at once would only queue in
// the API server.
const registrations = 64

// registerAll registers every node that does not follow a label, and
// returns the first error once all are done.
func (s *standIn) registerAll(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(s.cfg.Cluster.Nodes))
	slots := make(chan struct{}, registrations)
	for _, n := range s.cfg.Cluster.Nodes {
		if n.Registration == spec.OnLabel {
			continue
		}
		wg.Go(func() {
			if _, err := s.nodes.wait(ctx, n.Name); err != nil {
				return
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			if err := s.register(ctx, n); err != nil && ctx.Err() == nil {
				logger.Error(err, "Registration failed", "node", n.Name)
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// pluginHost runs the node plugins: a plugin per driver and node with
// the driver.
type pluginHost struct {
	ctx     context.Context
	mu      sync.Mutex
	plugins []*plugin.Plugin
	// serving has a channel per node with the driver, closed once every
	// driver's plugin on it serves, so that a node registers as soon as
	// its own plugins are up rather than after all of them.
	serving map[string]chan struct{}
	// failed is closed when opening a plugin failed.
	failed chan struct{}
}

// newPluginHost makes the host of cl's plugins, which serve until ctx is
// done.
func newPluginHost(ctx context.Context, cl *spec.Cluster) *pluginHost {
	h := &pluginHost{ctx: ctx, serving: map[string]chan struct{}{}, failed: make(chan struct{})}
	for _, n := range driverNodes(cl) {
		h.serving[n.Name] = make(chan struct{})
	}
	return h
}

// start opens the plugins node by node, in the cluster's order (up
// creates the Nodes in it), a few nodes at a time, and serves each
// node's plugins until ctx is done. The first plugin probes whether bind
// mounts work here; the others take its answer instead of probing again.
func (h *pluginHost) start(cfg Config) error {
	nodes := driverNodes(cfg.Cluster)
	if len(nodes) == 0 {
		return nil
	}
	drivers := cfg.Drivers()
	first, err := newPlugin(cfg, drivers[0], nodes[0], "auto")
	if err != nil {
		close(h.failed)
		return err
	}
	h.add(first, drivers[0], nodes[0])
	g := new(errgroup.Group)
	g.SetLimit(8)
	for i, n := range nodes {
		g.Go(func() error {
			for j, d := range drivers {
				if i == 0 && j == 0 {
					continue
				}
				p, err := newPlugin(cfg, d, n, first.MountKind())
				if err != nil {
					return err
				}
				h.add(p, d, n)
			}
			close(h.serving[n.Name])
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		close(h.failed)
		return err
	}
	return nil
}

// add records a plugin, to close it, and serves it.
func (h *pluginHost) add(p *plugin.Plugin, d Driver, n spec.Node) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.plugins = append(h.plugins, p)
	go func() {
		if err := p.Serve(h.ctx); err != nil {
			klog.FromContext(h.ctx).Error(err, "Node plugin stopped", "driver", d.Name, "node", n.Name)
		}
	}()
}

// wait returns once every driver's plugin on node serves, or with an
// error when opening the plugins failed or ctx is done.
func (h *pluginHost) wait(ctx context.Context, node string) error {
	select {
	case <-h.serving[node]:
		return nil
	case <-h.failed:
		return fmt.Errorf("node %s: the node plugins did not start", node)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close closes every plugin; their Serve ends with the host's context.
func (h *pluginHost) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.plugins {
		_ = p.Close()
	}
}

func driverNodes(cl *spec.Cluster) []spec.Node {
	var out []spec.Node
	for _, n := range cl.Nodes {
		if n.HasDriver() {
			out = append(out, n)
		}
	}
	return out
}

func newPlugin(cfg Config, d Driver, n spec.Node, mount string) (*plugin.Plugin, error) {
	zone, err := cfg.Topology.FindZone(n.Region + "/" + n.Zone)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	pc := plugin.Config{
		Name: d.Name, Endpoint: "unix://" + d.socket(n.Name), NodeID: n.Name,
		StateDir: filepath.Join(d.StateDir, n.Name), DataDir: d.DataDir,
		Topology: d.topology(cfg.Topology), Node: plugin.NodeLocation{Zone: zone, Rack: n.Rack},
		ServeNode: true, Mount: mount,
		// Block volumes stay bind-mounted files: nothing here runs a
		// container that needs a device node, and thousands of node
		// plugins on one host would each attach loop devices from the one
		// kernel's pool, for nothing.
		BlockDevices: plugin.BlockDevicesFile,
		// The state goes with the cluster; a thousand plugins waiting on
		// their fsyncs took half a minute to open on a busy disk.
		Volatile: true,
	}
	if err := pc.DisableCapabilities(d.Disable); err != nil {
		return nil, fmt.Errorf("driver %s: %w", d.Name, err)
	}
	p, err := plugin.New(pc)
	if err != nil {
		return nil, fmt.Errorf("driver %s on node %s: %w", d.Name, n.Name, err)
	}
	return p, nil
}
