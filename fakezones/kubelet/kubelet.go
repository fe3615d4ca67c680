package kubelet

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
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
	// SocketDir holds its node plugins' sockets and StateDir their state
	// databases, one per node; DataDir is its controller's data
	// directory, which they share.
	SocketDir, StateDir, DataDir string
}

func (d Driver) socket(node string) string { return filepath.Join(d.SocketDir, node+".sock") }

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
		out = append(out, Driver{Name: e.Name, Disable: e.DisableCapabilities,
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
	// The watch first: its list overlaps opening the plugins.
	w, stopWatch, err := watchNodes(ctx, cfg.Kube, names, followed)
	if err != nil {
		return err
	}
	defer stopWatch()
	t0 := time.Now()
	plugins, err := startPlugins(ctx, cfg)
	defer func() {
		for _, p := range plugins {
			_ = p.Close()
		}
	}()
	if err != nil {
		return err
	}
	logger.Info("Node plugins serving", "plugins", len(plugins), "took", time.Since(t0))
	// Followers of a registration label run until ctx is done; Run waits
	// for them before closing the plugins they call.
	var followers sync.WaitGroup
	defer followers.Wait()
	for _, n := range cfg.Cluster.Nodes {
		if n.Registration == spec.OnLabel {
			followers.Go(func() {
				if err := followLabel(ctx, cfg, w, n); err != nil && ctx.Err() == nil {
					logger.Error(err, "Following the registration label failed", "node", n.Name)
				}
			})
		}
	}
	if err := registerAll(ctx, cfg, w); err != nil {
		return err
	}
	logger.Info("All node plugins registered at start", "nodes", len(cfg.Cluster.Nodes), "took", time.Since(t0))
	<-ctx.Done()
	return nil
}

// registrations is how many nodes register at once: each waits for its
// Node, then makes one or two API calls; more at once would only queue in
// the API server.
const registrations = 64

// registerAll registers every node that does not follow a label, and
// returns the first error once all are done.
func registerAll(ctx context.Context, cfg Config, w *nodeWatch) error {
	logger := klog.FromContext(ctx)
	var wg sync.WaitGroup
	errs := make(chan error, len(cfg.Cluster.Nodes))
	slots := make(chan struct{}, registrations)
	for _, n := range cfg.Cluster.Nodes {
		if n.Registration == spec.OnLabel {
			continue
		}
		wg.Go(func() {
			if _, err := w.wait(ctx, n.Name); err != nil {
				return
			}
			slots <- struct{}{}
			defer func() { <-slots }()
			if err := register(ctx, cfg, w, n); err != nil && ctx.Err() == nil {
				logger.Error(err, "Registration failed", "node", n.Name)
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// instance is one node plugin: a driver on a node.
type instance struct {
	driver Driver
	node   spec.Node
}

// startPlugins opens a node plugin per driver and node with the driver, a
// few at a time: each opens its own state database. The first one probes
// whether bind mounts work here; the others take its answer instead of
// probing again.
func startPlugins(ctx context.Context, cfg Config) ([]*plugin.Plugin, error) {
	var all []instance
	for _, d := range cfg.Drivers() {
		for _, n := range driverNodes(cfg.Cluster) {
			all = append(all, instance{d, n})
		}
	}
	plugins := make([]*plugin.Plugin, len(all))
	if len(all) == 0 {
		return nil, nil
	}
	first, err := newPlugin(cfg, all[0], "auto")
	if err != nil {
		return nil, err
	}
	plugins[0] = first
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, in := range all[1:] {
		g.Go(func() error {
			p, err := newPlugin(cfg, in, first.MountKind())
			plugins[i+1] = p
			return err
		})
	}
	err = g.Wait()
	plugins = slices.DeleteFunc(plugins, func(p *plugin.Plugin) bool { return p == nil })
	if err != nil {
		return plugins, err
	}
	for i, p := range plugins {
		go func() {
			if err := p.Serve(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Node plugin stopped", "driver", all[i].driver.Name, "node", all[i].node.Name)
			}
		}()
	}
	return plugins, nil
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

func newPlugin(cfg Config, in instance, mount string) (*plugin.Plugin, error) {
	n, d := in.node, in.driver
	zone, err := cfg.Topology.FindZone(n.Region + "/" + n.Zone)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	pc := plugin.Config{
		Name: d.Name, Endpoint: "unix://" + d.socket(n.Name), NodeID: n.Name,
		StateDir: filepath.Join(d.StateDir, n.Name), DataDir: d.DataDir,
		Topology: cfg.Topology, Node: plugin.NodeLocation{Zone: zone},
		ServeNode: true, Mount: mount,
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
