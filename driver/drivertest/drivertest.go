package drivertest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

// NodeID is the node the in-process driver serves, unless Options.Config
// changes it.
const NodeID = "node-1"

// Options say which driver to start. The zero value is the driver in
// world.Default() serving the controller and node services as NodeID.
type Options struct {
	// World is the topology file's YAML; ignored when Topology is set.
	World string
	// Topology is the driver's world; nil: World, or world.Default().
	Topology *world.Topology
	// Faults is a fault file's YAML (driver/faults/README.md), written to
	// Driver.FaultsFile and re-read when it changes; "": no injector.
	Faults string
	// Config changes the configuration before the driver is created. The
	// driver is served on the kit's socket whatever Endpoint it sets.
	Config func(*plugin.Config)
	// Dir holds the socket, the state directory and the fault file;
	// "": a fresh temporary directory short enough for a unix socket path.
	Dir string
}

// Driver is a zonepath driver served in-process until Stop or the end of
// the test.
type Driver struct {
	// Endpoint is the driver's unix:// address, as a CO is given it.
	Endpoint string
	// Plugin is the running plugin, for tests that inspect it.
	Plugin *plugin.Plugin
	// Config is the configuration the plugin was created with.
	Config plugin.Config
	// FaultsFile is the fault file when Options.Faults is set.
	FaultsFile string

	socket string
	stop   func()
}

// Start serves a zonepath driver on a unix socket until the test ends.
func Start(t testing.TB, opts Options) *Driver {
	t.Helper()
	dir := opts.Dir
	if dir == "" {
		dir = ShortTempDir(t)
	}
	socket := filepath.Join(dir, "csi.sock")
	cfg := plugin.Config{
		Topology: opts.Topology, StateDir: filepath.Join(dir, "state"), NodeID: NodeID,
		ServeController: true, ServeNode: true, Endpoint: "unix://" + socket,
	}
	if cfg.Topology == nil && opts.World != "" {
		topo, err := world.Parse([]byte(opts.World))
		if err != nil {
			t.Fatalf("drivertest: world: %v", err)
		}
		cfg.Topology = topo
	}
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	d := &Driver{Endpoint: "unix://" + socket, socket: socket}
	if opts.Faults != "" && cfg.Faults == nil {
		d.FaultsFile = filepath.Join(dir, "faults.yaml")
		cfg.Faults = startFaults(t, d.FaultsFile, opts.Faults, cfg)
	}
	d.Config = cfg
	dataDir := cfg.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(cfg.StateDir, "data")
	}
	detachLeftovers(t, dataDir)
	d.start(t)
	return d
}

// startFaults writes rules to path and watches it, the way bin/zonepath
// runs with --fault-rules: segment rules see the node's segment when the
// node service is served.
func startFaults(t testing.TB, path, rules string, cfg plugin.Config) *faults.Injector {
	t.Helper()
	if err := os.WriteFile(path, []byte(rules), 0o600); err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	var seg map[string]string
	if cfg.ServeNode {
		topo := cfg.Topology
		if topo == nil {
			topo = world.Default()
		}
		seg, _ = topo.NodeSegment(cfg.Node.Zone, cfg.Node.Rack)
	}
	inj, err := faults.New(path, seg)
	if err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inj.Watch(ctx, 10*time.Millisecond) // a test may rewrite the rules
	return inj
}

func (d *Driver) start(t testing.TB) {
	t.Helper()
	p, err := plugin.New(d.Config)
	if err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	srv := p.GRPCServer()
	serve(t, srv, d.socket)
	var once sync.Once
	d.Plugin = p
	d.stop = func() { once.Do(func() { srv.Stop(); p.Close() }) }
	t.Cleanup(d.stop)
}

// Stop stops the driver now; the end of the test stops it otherwise.
func (d *Driver) Stop() { d.stop() }

// Restart stops the driver and starts a new one on the same state, the
// way a node reboots a driver.
func (d *Driver) Restart(t testing.TB) {
	t.Helper()
	d.Stop()
	d.start(t)
}

// Conn connects to the driver like a CO, with opts added (interceptors,
// say); the connection closes when the test ends.
func (d *Driver) Conn(t testing.TB, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	return Dial(t, d.Endpoint, opts...)
}

// Serve serves srv (say, a fake CSI driver) on a unix socket until the
// test ends and returns its unix:// endpoint.
func Serve(t testing.TB, srv *grpc.Server) string {
	t.Helper()
	sock := filepath.Join(ShortTempDir(t), "csi.sock")
	serve(t, srv, sock)
	t.Cleanup(srv.Stop)
	return "unix://" + sock
}

func serve(t testing.TB, srv *grpc.Server, sock string) {
	t.Helper()
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	go func() { _ = srv.Serve(lis) }()
}

// Dial connects to a CSI endpoint without transport security, as a CO
// does to a unix socket; the connection closes when the test ends.
func Dial(t testing.TB, endpoint string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	conn, err := grpc.NewClient(endpoint, opts...)
	if err != nil {
		t.Fatalf("drivertest: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// ShortTempDir is a temporary directory removed when the test ends, short
// enough for a socket in it: unix socket paths are limited to ~108 bytes,
// which t.TempDir() exceeds for long test names.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
