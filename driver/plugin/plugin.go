package plugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/kubernetes-csi/csi-lib-utils/protosanitizer"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/klog/v2"

	"github.com/zonepath/zonepath/driver/datapath"
	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/driver/state"
	"github.com/zonepath/zonepath/driver/world"
)

// DefaultName is the driver's CSI name.
const DefaultName = "zonepath.csi.dev"

// Config is everything the plugin needs, filled from flags by cmd/zonepath.
type Config struct {
	Name    string
	Version string
	// Endpoint is unix:///path/to.sock (or a plain path).
	Endpoint string
	NodeID   string
	StateDir string
	// DataDir holds volume and snapshot data; node plugins of the same
	// machine share it with the controller, one controller per data
	// directory. Defaults to StateDir/data.
	DataDir  string
	Topology *world.Topology
	// Node is where this node plugin lives; required when ServeNode.
	Node NodeLocation
	// MaxVolumesPerNode overrides the topology file when > 0.
	MaxVolumesPerNode int64
	// MaxVolumeSize bounds CreateVolume and expansion; 0 means unbounded.
	MaxVolumeSize int64

	ServeController bool
	ServeNode       bool
	// The capabilities a test can switch off, so the driver plays
	// one that lacks them.
	DisableControllerService     bool
	DisableVolumeAccessibility   bool
	DisableSnapshotAccessibility bool
	// DisableModifyVolume switches off the MODIFY_VOLUME controller
	// capability (modify.go).
	DisableModifyVolume bool
	// DisableGroupController switches off GROUP_CONTROLLER_SERVICE
	// (groupsnapshots.go).
	DisableGroupController bool
	// The volume health capabilities (health.go): GET_VOLUME_HEALTH
	// (controller and node; off takes LIST_VOLUME_HEALTH with it),
	// LIST_VOLUME_HEALTH and the node's GET_STORAGE_HEALTH.
	DisableVolumeHealth     bool
	DisableListVolumeHealth bool
	DisableStorageHealth    bool
	// Mount says whether node operations bind-mount: "auto" probes.
	Mount string
	// BlockDevices says how a block volume appears on the node: "loop"
	// (a loop device backed by its file, the device node bind-mounted),
	// "file" (the file itself bind-mounted) or "auto" (and ""): loop where
	// bind mounts and a probe attach work. See blockdev.go.
	BlockDevices string
	// Volatile skips fsync of the state and of data directory entries:
	// for node plugins whose state goes with their fake node, thousands
	// of which open at once (fakezones/kubelet).
	Volatile bool

	Faults *faults.Injector
}

// NodeLocation is a node's place in the topology.
type NodeLocation struct {
	Zone int
	Rack string
}

// Plugin serves CSI.
type Plugin struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
	csi.UnimplementedGroupControllerServer

	cfg     Config
	topo    *world.Topology
	store   *state.Store
	data    *dataDir
	mounter mounter
	blocks  blockDevices
	nodes   *nodeDirectory
	// snapshotEntries and volumeEntries hold the encoded list entries.
	snapshotEntries *encodingCache[state.Snapshot]
	volumeEntries   *encodingCache[state.Volume]
	// maxFileSize is the largest block volume the data directory holds.
	maxFileSize int64
	// lock holds the data directory while this plugin serves the
	// controller; see controllerLock.
	lock *os.File
	// cuts says how group snapshots are cut, and keeps read-write
	// publishes out of volumes one is cutting on tmpfs; see groupcut.go.
	cuts cutGuard
}

// New opens the state and checks the configuration.
func New(cfg Config) (*Plugin, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Topology == nil {
		cfg.Topology = world.Default()
	}
	if cfg.StateDir == "" {
		return nil, fmt.Errorf("a state directory is required")
	}
	if cfg.DataDir == "" {
		cfg.DataDir = filepath.Join(cfg.StateDir, "data")
	}
	if cfg.ServeNode && cfg.NodeID == "" {
		return nil, fmt.Errorf("a node ID is required to serve the node service")
	}
	if n := cfg.Topology.PreattachedVolumesPerNode(); cfg.MaxVolumesPerNode > 0 && cfg.MaxVolumesPerNode <= n {
		return nil, fmt.Errorf("max volumes per node %d leaves no room beside the topology file's preattachedVolumesPerNode (%d)", cfg.MaxVolumesPerNode, n)
	}
	data, err := newDataDir(cfg.DataDir, cfg.Volatile)
	if err != nil {
		return nil, err
	}
	m, err := newMounter(cfg.Mount, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	blocks, err := nodeBlockDevices(cfg, m)
	if err != nil {
		return nil, err
	}
	opts := []state.Option{state.BeforeCommit(data.syncEntries)}
	if cfg.Volatile {
		opts = append(opts, state.Volatile())
	}
	store, err := state.Open(cfg.StateDir, opts...)
	if err != nil {
		return nil, err
	}
	p := &Plugin{cfg: cfg, topo: cfg.Topology, store: store, data: data, mounter: m, blocks: blocks}
	if p.cuts.quietOnly, err = datapath.HidesMappedStores(cfg.DataDir); err != nil {
		store.Close()
		return nil, err
	}
	if p.cuts.quietOnly && cfg.ServeController {
		klog.InfoS("The data directory is on tmpfs, where stores through shared mappings leave no trace: group snapshots of volumes published read-write are refused", "dataDir", cfg.DataDir)
	}
	p.nodes = newNodeDirectory(p)
	p.snapshotEntries, p.volumeEntries = p.newEncodingCaches()
	if cfg.ServeController {
		if err := p.takeDataDir(); err != nil {
			p.Close()
			return nil, err
		}
	}
	if p.maxFileSize, err = probeMaxFileSize(cfg.DataDir, p.maxVolumeSize(false)); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// MountKind is how node operations mount: "bind" or "none", the outcome
// of Config.Mount's probe, so that a host of many node plugins probes once.
func (p *Plugin) MountKind() string { return p.mounter.kind() }

// BlockDevicesKind is how block volumes appear on the node: "loop" or
// "file", the outcome of Config.BlockDevices.
func (p *Plugin) BlockDevicesKind() string { return p.blocks.kind() }

// Close releases the state and the data directory.
func (p *Plugin) Close() error {
	if p.lock != nil {
		p.lock.Close()
	}
	return p.store.Close()
}

// Serve listens on the endpoint and serves until ctx is done.
func (p *Plugin) Serve(ctx context.Context) error {
	lis, err := p.Listen()
	if err != nil {
		return err
	}
	return p.ServeListener(ctx, lis)
}

// Listen opens the endpoint's socket. Connections queue from then on, so a
// caller can tell kubelet about the socket before ServeListener runs.
func (p *Plugin) Listen() (net.Listener, error) { return listen(p.cfg.Endpoint) }

// ServeListener serves on lis until ctx is done.
func (p *Plugin) ServeListener(ctx context.Context, lis net.Listener) error {
	srv := p.GRPCServer()
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	klog.FromContext(ctx).Info("Serving CSI", "endpoint", p.cfg.Endpoint, "driver", p.cfg.Name, "version", p.cfg.Version,
		"controller", p.cfg.ServeController, "node", p.cfg.ServeNode, "nodeID", p.cfg.NodeID, "mounts", p.mounter.kind(), "blockDevices", p.blocks.kind())
	return srv.Serve(lis)
}

// GRPCServer returns a gRPC server with the plugin's services registered,
// requests logged (secrets stripped) and faults injected.
func (p *Plugin) GRPCServer() *grpc.Server {
	var interceptors []grpc.UnaryServerInterceptor
	if p.cfg.Topology != nil && p.cfg.Topology.TerseErrors {
		// Outermost: the log keeps the full message, the caller sees
		// only the code's meaning, injected faults' messages included.
		interceptors = append(interceptors, terseErrors)
	}
	interceptors = append(interceptors, logRequests)
	if p.cfg.Faults != nil {
		interceptors = append(interceptors, p.cfg.Faults.UnaryInterceptor())
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	csi.RegisterIdentityServer(srv, p)
	if p.cfg.ServeController {
		csi.RegisterControllerServer(srv, p)
	}
	if p.groupController() {
		csi.RegisterGroupControllerServer(srv, p)
	}
	if p.cfg.ServeNode {
		csi.RegisterNodeServer(srv, p)
	}
	return srv
}

func listen(endpoint string) (net.Listener, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if path == "" || strings.Contains(path, "://") {
		return nil, fmt.Errorf("endpoint %q: only unix:///path/to/socket endpoints are supported", endpoint)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	// Connecting needs write permission on the socket. Its group may
	// connect too, so that sidecars need not run as the driver's user: in
	// a pod with an fsGroup the socket's directory is setgid to that
	// group, and the socket inherits it.
	if err := os.Chmod(path, SocketMode); err != nil {
		lis.Close()
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return lis, nil
}

// SocketMode is the permission of the driver's socket: owner and group
// may connect, nobody else.
const SocketMode os.FileMode = 0o660

func logRequests(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	logger := klog.FromContext(ctx).WithValues("method", info.FullMethod)
	logger.V(4).Info("Request", "request", protosanitizer.StripSecrets(req))
	resp, err := handler(klog.NewContext(ctx, logger), req)
	if err != nil {
		logger.V(2).Info("Failed", "err", err)
	} else if v := logger.V(5); v.Enabled() {
		v.Info("Response", "response", protosanitizer.StripSecrets(readable(resp)))
	}
	return resp, err
}

// readable returns a copy of a response the driver sends as raw bytes
// (the list responses, entries.go) with its fields decoded, which would
// otherwise log as {}; any other response as it is. Called only when the
// response is logged.
func readable(resp any) any {
	m, ok := resp.(proto.Message)
	if !ok || len(m.ProtoReflect().GetUnknown()) == 0 {
		return resp
	}
	out := m.ProtoReflect().New().Interface()
	data, err := proto.Marshal(m)
	if err == nil {
		err = proto.Unmarshal(data, out)
	}
	if err != nil {
		return resp
	}
	return out
}
