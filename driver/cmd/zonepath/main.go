// Command zonepath is the zonepath CSI driver: controller and node
// services of a topology-aware hostpath driver in fake zones.
package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/zonepath/zonepath/driver/faults"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/registration"
	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "devel"

type options struct {
	name                                              string
	endpoint, nodeID, stateDir, dataDir, topologyFile string
	nodeZone, nodeRack, kubeconfig                    string
	nodeFromLabels                                    bool
	controller, node                                  bool
	disable                                           string
	maxVolumesPerNode, maxVolumeSize                  int64
	mount, blockDevices                               string
	faultRules                                        []string
	faultReload                                       time.Duration
	kubeletRegistrationPath, pluginRegistrationPath   string
	showVersion                                       bool
}

func main() {
	cmd := bootstrap.NewCommand("zonepath", version, nil)
	cmd.AddGoFlags(flag.CommandLine)
	var o options
	flag.StringVar(&o.name, "drivername", plugin.DefaultName, "name of the driver (GetPluginInfo), for running a second instance beside another; CSI domain name notation, at most 63 characters")
	flag.StringVar(&o.endpoint, "endpoint", "unix:///var/lib/kubelet/plugins/zonepath.csi.dev/csi.sock", "CSI endpoint, unix:///path/to/socket")
	flag.StringVar(&o.nodeID, "nodeid", "", "ID of this node; required with --node")
	flag.StringVar(&o.stateDir, "state-dir", "/var/lib/zonepath", "directory of the durable state database")
	flag.StringVar(&o.dataDir, "data-dir", "", "directory of volume and snapshot data, shared by the node plugins of one machine with at most one controller, which locks it and reclaims crash leftovers at start (default <state-dir>/data)")
	flag.StringVar(&o.topologyFile, "topology-file", "", "YAML file describing regions, zones, capacities, quotas and nodes (default: one region with zones zone-a, zone-b, zone-c)")
	flag.StringVar(&o.nodeZone, "node-zone", "", "zone of this node, as region/zone or a unique zone name")
	flag.StringVar(&o.nodeRack, "node-rack", "", "rack of this node, when its zone has racks")
	flag.BoolVar(&o.nodeFromLabels, "node-topology-from-labels", false, "read this node's segment from its Node object's topology labels")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig for --node-topology-from-labels (default: $KUBECONFIG, else in-cluster)")
	flag.BoolVar(&o.controller, "controller", true, "serve the controller service")
	flag.BoolVar(&o.node, "node", true, "serve the node service")
	flag.StringVar(&o.disable, "disable-capabilities", "", "comma-separated capabilities not to advertise: CONTROLLER_SERVICE, VOLUME_ACCESSIBILITY_CONSTRAINTS, SNAPSHOT_ACCESSIBILITY_CONSTRAINTS, MODIFY_VOLUME, GROUP_CONTROLLER_SERVICE, and the volume health RPCs GET_VOLUME_HEALTH (controller and node; takes LIST_VOLUME_HEALTH with it), LIST_VOLUME_HEALTH, GET_STORAGE_HEALTH")
	flag.Int64Var(&o.maxVolumesPerNode, "max-volumes-per-node", 0, "attach limit reported and enforced for every node; overrides the topology file when > 0")
	flag.Int64Var(&o.maxVolumeSize, "max-volume-size", 0, "largest volume in bytes; 0 means no limit")
	flag.StringVar(&o.mount, "mount", "auto", "node mounts: bind, none (only create paths), or auto (bind when permitted)")
	flag.StringVar(&o.blockDevices, "block-devices", plugin.BlockDevicesAuto, "how a block volume appears on the node: loop (a loop device backed by the volume's file, its node bind-mounted: what a container runtime needs), file (the file itself bind-mounted, where no loop device can exist or is wanted), or auto (loop when bind mounts work and a loop device can be attached and detached, else file)")
	o.addFaultFlags(flag.CommandLine)
	flag.StringVar(&o.kubeletRegistrationPath, "kubelet-registration-path", "", "with --node: register with kubelet, giving it this path of the CSI socket as kubelet sees it on the host (e.g. /var/lib/kubelet/plugins/zonepath.csi.dev/csi.sock); replaces the node-driver-registrar sidecar where its image cannot be pulled. Empty: do not register")
	flag.StringVar(&o.pluginRegistrationPath, "plugin-registration-path", registration.DefaultDir, "with --kubelet-registration-path: kubelet's plugin registration directory (/var/lib/kubelet/plugins_registry on the host) as mounted in this container")
	flag.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	flag.Parse()
	if o.showVersion {
		fmt.Println(o.name, version)
		return
	}
	plugin.ApplyRuntimeDefaults()
	cmd.Run(func(ctx context.Context) error { return run(ctx, o) })
}

// addFaultFlags registers the fault rule flags. --fault-rules is
// repeatable, as Kubernetes' list flags are, rather than comma-separated,
// so that any path given before repeats were possible still means itself.
func (o *options) addFaultFlags(fs *flag.FlagSet) {
	fs.Var(cliflag.NewStringSlice(&o.faultRules), "fault-rules", "YAML file of fault rules, re-read when it changes; repeat the flag for more files, each re-read on its own, so that rewriting one (a tool's outage rules) keeps the counters of the others' rules")
	fs.DurationVar(&o.faultReload, "fault-rules-reload-interval", time.Second, "how often to check the --fault-rules files for changes")
}

// run serves until ctx ends (SIGTERM) or the kubelet registration fails.
func run(ctx context.Context, o options) error {
	cfg, err := o.config(ctx)
	if err != nil {
		return err
	}
	reg, err := o.registration()
	if err != nil {
		return err
	}
	if cfg.Faults != nil {
		go cfg.Faults.Watch(ctx, o.faultReload)
	}
	p, err := plugin.New(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	// Listen before registering: kubelet calls NodeGetInfo on the CSI
	// socket as soon as it learns of it.
	lis, err := p.Listen()
	if err != nil {
		return err
	}
	// Whichever ends first (a signal, or kubelet refusing the plugin)
	// stops the other; the first error is the exit status.
	g, ctx := errgroup.WithContext(ctx)
	ctx, stop := context.WithCancel(ctx)
	g.Go(func() error { defer stop(); return p.ServeListener(ctx, lis) })
	if reg != nil {
		g.Go(func() error { defer stop(); return reg.Serve(ctx) })
	}
	return g.Wait()
}

// registration is the kubelet registration the flags ask for, or nil.
func (o options) registration() (*registration.Server, error) {
	if o.kubeletRegistrationPath == "" {
		return nil, nil
	}
	if !o.node {
		return nil, fmt.Errorf("%s registers the node plugin with kubelet: it needs --node", registration.EndpointFlag)
	}
	return registration.New(registration.Config{DriverName: o.name, Endpoint: o.kubeletRegistrationPath, Dir: o.pluginRegistrationPath})
}

func (o options) config(ctx context.Context) (plugin.Config, error) {
	cfg := plugin.Config{
		Name: o.name, Version: version, Endpoint: o.endpoint, NodeID: o.nodeID, StateDir: o.stateDir, DataDir: o.dataDir,
		ServeController: o.controller, ServeNode: o.node, MaxVolumesPerNode: o.maxVolumesPerNode,
		MaxVolumeSize: o.maxVolumeSize, Mount: o.mount, BlockDevices: o.blockDevices,
	}
	if err := plugin.ValidateName(o.name); err != nil {
		return cfg, fmt.Errorf("--drivername: %w", err)
	}
	if !o.controller && !o.node {
		return cfg, fmt.Errorf("--controller=false and --node=false: nothing to serve")
	}
	if err := cfg.DisableCapabilities(strings.Split(o.disable, ",")); err != nil {
		return cfg, fmt.Errorf("--disable-capabilities: %w", err)
	}
	topo := world.Default()
	if o.topologyFile != "" {
		var err error
		if topo, err = world.Load(o.topologyFile); err != nil {
			return cfg, err
		}
	}
	cfg.Topology = topo
	if o.node {
		loc, err := o.nodeLocation(ctx, topo)
		if err != nil {
			return cfg, err
		}
		cfg.Node = loc
	}
	var seg map[string]string
	if o.node {
		seg, _ = topo.NodeSegment(cfg.Node.Zone, cfg.Node.Rack)
	}
	inj, err := faults.NewFiles(o.faultRules, seg)
	if err != nil {
		return cfg, fmt.Errorf("--fault-rules: %w", err)
	}
	if len(inj.Files()) > 0 {
		cfg.Faults = inj
	}
	return cfg, nil
}

// nodeLocation finds this node's zone: --node-zone, else the topology
// file's entry for --nodeid, else the Node object's labels.
func (o options) nodeLocation(ctx context.Context, topo *world.Topology) (plugin.NodeLocation, error) {
	if o.nodeID == "" {
		return plugin.NodeLocation{}, fmt.Errorf("--nodeid is required with --node")
	}
	switch {
	case o.nodeZone != "":
		zone, err := topo.FindZone(o.nodeZone)
		if err != nil {
			return plugin.NodeLocation{}, fmt.Errorf("--node-zone: %w", err)
		}
		if _, err := topo.NodeSegment(zone, o.nodeRack); err != nil {
			return plugin.NodeLocation{}, fmt.Errorf("--node-rack: %w", err)
		}
		return plugin.NodeLocation{Zone: zone, Rack: o.nodeRack}, nil
	case o.nodeFromLabels:
		return nodeFromLabels(ctx, o.kubeconfig, o.nodeID, topo)
	}
	if n, ok := topo.Node(o.nodeID); ok {
		return plugin.NodeLocation{Zone: n.Zone, Rack: n.Rack}, nil
	}
	return plugin.NodeLocation{}, fmt.Errorf("node %s: give --node-zone, list it under nodes: in --topology-file, or use --node-topology-from-labels", o.nodeID)
}
