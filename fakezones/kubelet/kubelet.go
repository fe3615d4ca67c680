package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

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
	plugins, err := startPlugins(ctx, cfg)
	defer func() {
		for _, p := range plugins {
			_ = p.Close()
		}
	}()
	if err != nil {
		return err
	}
	// Followers of a registration label run until ctx is done; Run waits
	// for them before closing the plugins they call.
	var followers sync.WaitGroup
	defer followers.Wait()
	var wg sync.WaitGroup
	errs := make(chan error, len(cfg.Cluster.Nodes))
	for _, n := range cfg.Cluster.Nodes {
		if n.Registration == spec.OnLabel {
			followers.Go(func() {
				if err := followLabel(ctx, cfg, n); err != nil && ctx.Err() == nil {
					logger.Error(err, "Following the registration label failed", "node", n.Name)
				}
			})
			continue
		}
		wg.Go(func() {
			if err := register(ctx, cfg, n); err != nil && ctx.Err() == nil {
				logger.Error(err, "Registration failed", "node", n.Name)
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	logger.Info("All node plugins registered at start", "nodes", len(cfg.Cluster.Nodes))
	<-ctx.Done()
	return nil
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

// register brings one node's CSINode and labels to what its registration
// mode says.
func register(ctx context.Context, cfg Config, n spec.Node) error {
	if n.Registration == spec.NoCSINode {
		return nil
	}
	if err := ensureCSINode(ctx, cfg.Kube, n.Name); err != nil {
		return err
	}
	if !n.HasDriver() {
		return nil
	}
	if n.RegisterAfter > 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(n.RegisterAfter):
		}
	}
	return registerDrivers(ctx, cfg, n.Name)
}

// registerDrivers registers every driver's node plugin on a node.
func registerDrivers(ctx context.Context, cfg Config, node string) error {
	// One driver after the other: each rewrites the node's annotation.
	for _, d := range cfg.Drivers() {
		if err := registerDriver(ctx, cfg.Kube, d, node); err != nil {
			return fmt.Errorf("node %s, driver %s: %w", node, d.Name, err)
		}
	}
	return nil
}

// registerDriver does what kubelet's plugin registration does for one
// driver's node plugin on one node.
func registerDriver(ctx context.Context, kube kubernetes.Interface, d Driver, node string) error {
	info, err := nodeGetInfo(ctx, d.socket(node))
	if err != nil {
		return err
	}
	if err := labelNode(ctx, kube, node, d.Name, info); err != nil {
		return err
	}
	if err := addDriver(ctx, kube, node, d.Name, info); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Registered", "node", node, "driver", d.Name, "nodeID", info.GetNodeId(),
		"maxVolumesPerNode", info.GetMaxVolumesPerNode(), "topology", info.GetAccessibleTopology().GetSegments())
	return nil
}

// followLabel keeps an OnLabel node's registration in step with its
// spec.RegisterLabel until ctx is done. It watches only that Node. A
// failed (de)registration is logged and tried again on the node's next
// update (kwok's heartbeats update it).
func followLabel(ctx context.Context, cfg Config, n spec.Node) error {
	if err := ensureCSINode(ctx, cfg.Kube, n.Name); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cfg.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", n.Name).String()
	}))
	defer factory.Shutdown()
	nodes := factory.Core().V1().Nodes()
	// Level-triggered: a change only wakes the loop, which reads the
	// latest Node; a wake-up already pending covers later changes.
	changed := make(chan struct{}, 1)
	wake := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: wake, UpdateFunc: func(_, obj any) { wake(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	logger := klog.FromContext(ctx).WithValues("node", n.Name)
	registered := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		node, err := nodes.Lister().Get(n.Name)
		if err != nil {
			continue
		}
		want := node.Labels[spec.RegisterLabel] == "true"
		if want == registered {
			continue
		}
		if want {
			err = registerDrivers(ctx, cfg, n.Name)
		} else {
			err = deregisterDrivers(ctx, cfg, n.Name)
		}
		if err != nil {
			logger.Error(err, "Changing the registration failed; trying again on the next node update", "register", want)
			continue
		}
		registered = want
		logger.Info("Registration follows the node label", "label", spec.RegisterLabel, "registered", registered)
	}
}

// deregisterDrivers undoes registerDrivers as kubelet does when the node
// plugins go: their CSINode entries and node IDs go, the topology labels
// stay.
func deregisterDrivers(ctx context.Context, cfg Config, name string) error {
	kube := cfg.Kube
	var names []string
	for _, d := range cfg.Drivers() {
		names = append(names, d.Name)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		csiNode, err := kube.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(csiNode.Spec.Drivers), func(d storagev1.CSINodeDriver) bool { return slices.Contains(names, d.Name) })
		if len(kept) == len(csiNode.Spec.Drivers) {
			return nil
		}
		csiNode.Spec.Drivers = kept
		_, err = kube.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: removing the CSINode entry: %w", name, err)
	}
	patch := []byte(`{"metadata":{"annotations":{"` + NodeIDAnnotation + `":null}}}`)
	if _, err := kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("node %s: removing the node ID: %w", name, err)
	}
	return nil
}

// nodeGetInfo asks the plugin over its socket, as kubelet does, waiting
// for the socket to answer.
func nodeGetInfo(ctx context.Context, socket string) (*csi.NodeGetInfoResponse, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var resp *csi.NodeGetInfoResponse
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var callErr error
		resp, callErr = csi.NewNodeClient(conn).NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
		return callErr == nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("NodeGetInfo on %s: %w", socket, err)
	}
	return resp, nil
}

// ensureCSINode creates the node's CSINode once its Node exists: kubelet
// registers the Node itself, here "up" creates it.
func ensureCSINode(ctx context.Context, kube kubernetes.Interface, name string) error {
	var node *v1.Node
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		node, err = kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("waiting for node %s: %w", name, err)
	}
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			// Owned by its Node, as kubelet does, so deleting the node
			// deletes it.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	_, err = kube.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CSINode %s: %w", name, err)
	}
	return nil
}

// addDriver puts the plugin's entry into the CSINode, replacing an older
// entry of the same driver as kubelet does on re-registration.
func addDriver(ctx context.Context, kube kubernetes.Interface, name, driver string, info *csi.NodeGetInfoResponse) error {
	entry := storagev1.CSINodeDriver{Name: driver, NodeID: info.GetNodeId(), TopologyKeys: topologyKeys(info)}
	if n := info.GetMaxVolumesPerNode(); n > 0 {
		entry.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(min(n, 1<<31-1)))}
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		csiNode, err := kube.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		drivers := []storagev1.CSINodeDriver{entry}
		for _, d := range csiNode.Spec.Drivers {
			if d.Name != entry.Name {
				drivers = append(drivers, d)
			}
		}
		csiNode.Spec.Drivers = drivers
		_, err = kube.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
		return err
	})
}

func topologyKeys(info *csi.NodeGetInfoResponse) []string {
	var keys []string
	for k := range info.GetAccessibleTopology().GetSegments() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// labelNode adds the plugin's segment to the node's labels and its node ID
// to the nodeid annotation, leaving every other label alone. The
// annotation is one JSON map with an entry per driver, as kubelet keeps
// it, so it is read, extended and written back under the node's
// resourceVersion: a concurrent writer makes the patch conflict and retry
// instead of dropping another driver's entry.
func labelNode(ctx context.Context, kube kubernetes.Interface, name, driver string, info *csi.NodeGetInfoResponse) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ids := map[string]string{}
		if raw := node.Annotations[NodeIDAnnotation]; raw != "" {
			if err := json.Unmarshal([]byte(raw), &ids); err != nil {
				return fmt.Errorf("annotation %s of node %s: %w", NodeIDAnnotation, name, err)
			}
		}
		ids[driver] = info.GetNodeId()
		idsJSON, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": node.ResourceVersion,
			"labels":          info.GetAccessibleTopology().GetSegments(),
			"annotations":     map[string]string{NodeIDAnnotation: string(idsJSON)},
		}})
		if err != nil {
			return err
		}
		_, err = kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}
