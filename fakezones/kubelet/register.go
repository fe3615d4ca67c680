package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/fakezones/spec"
)

// register brings one node's CSINode and labels to what its registration
// mode says, once its Node exists. A node registered at start costs two
// API calls: one patch of the Node, one create of its CSINode with every
// driver's entry.
func (s *standIn) register(ctx context.Context, n spec.Node) error {
	kube := s.cfg.Kube
	if n.Registration == spec.NoCSINode {
		return nil
	}
	node, err := s.nodes.wait(ctx, n.Name)
	if err != nil {
		return err
	}
	if n.RegistersAtStart() {
		infos, err := s.nodeInfos(ctx, n.Name)
		if err != nil {
			return err
		}
		// The labels first, as kubelet: a consumer that sees the CSINode
		// entry finds the node labelled.
		if err := patchNode(ctx, kube, n.Name, node, infos); err != nil {
			return err
		}
		return createCSINode(ctx, kube, node, entries(infos))
	}
	if err := createCSINode(ctx, kube, node, nil); err != nil || !n.HasDriver() {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(n.RegisterAfter):
	}
	return s.registerDrivers(ctx, n.Name)
}

// driverInfo is one driver's NodeGetInfo answer on a node.
type driverInfo struct {
	driver string
	info   *csi.NodeGetInfoResponse
}

// nodeInfos asks every driver's node plugin on a node for its info, once
// they serve.
func (s *standIn) nodeInfos(ctx context.Context, node string) ([]driverInfo, error) {
	if err := s.plugins.wait(ctx, node); err != nil {
		return nil, err
	}
	var out []driverInfo
	for _, d := range s.cfg.Drivers() {
		info, err := nodeGetInfo(ctx, d.socket(node))
		if err != nil {
			return nil, fmt.Errorf("node %s, driver %s: %w", node, d.Name, err)
		}
		out = append(out, driverInfo{d.Name, info})
		klog.FromContext(ctx).V(2).Info("Registering", "node", node, "driver", d.Name, "nodeID", info.GetNodeId(),
			"maxVolumesPerNode", info.GetMaxVolumesPerNode(), "topology", info.GetAccessibleTopology().GetSegments())
	}
	return out, nil
}

// registerDrivers registers every driver's node plugin on a node whose
// CSINode exists: a late or re-registration.
func (s *standIn) registerDrivers(ctx context.Context, node string) error {
	infos, err := s.nodeInfos(ctx, node)
	if err != nil {
		return err
	}
	if err := patchNode(ctx, s.cfg.Kube, node, nil, infos); err != nil {
		return err
	}
	return setDrivers(ctx, s.cfg.Kube, node, entries(infos))
}

// followLabel keeps an OnLabel node's registration in step with its
// spec.RegisterLabel until ctx is done. A failed (de)registration is
// logged and tried again on the node's next update (kwok's heartbeats
// update it).
func (s *standIn) followLabel(ctx context.Context, n spec.Node) error {
	node, err := s.nodes.wait(ctx, n.Name)
	if err != nil {
		return err
	}
	if err := createCSINode(ctx, s.cfg.Kube, node, nil); err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("node", n.Name)
	registered := false
	for {
		// Level-triggered: a change only wakes the loop, which reads the
		// latest Node.
		node, err := s.nodes.lister.Get(n.Name)
		if want := err == nil && node.Labels[spec.RegisterLabel] == "true"; err == nil && want != registered {
			if want {
				err = s.registerDrivers(ctx, n.Name)
			} else {
				err = deregisterDrivers(ctx, s.cfg, n.Name)
			}
			if err != nil {
				logger.Error(err, "Changing the registration failed; trying again on the next node update", "register", want)
			} else {
				registered = want
				logger.Info("Registration follows the node label", "label", spec.RegisterLabel, "registered", registered)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.nodes.Changed(n.Name):
		}
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
	err := updateCSINode(ctx, kube, name, func(drivers []storagev1.CSINodeDriver) []storagev1.CSINodeDriver {
		return slices.DeleteFunc(drivers, func(d storagev1.CSINodeDriver) bool { return slices.Contains(names, d.Name) })
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

// createCSINode creates the node's CSINode with drivers' entries (none:
// an empty one, as kubelet creates before any plugin registers), owned by
// its Node as kubelet does, so deleting the node deletes it. One that
// exists already gets the entries instead.
func createCSINode(ctx context.Context, kube kubernetes.Interface, node *v1.Node, drivers []storagev1.CSINodeDriver) error {
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:            node.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: append([]storagev1.CSINodeDriver{}, drivers...)},
	}
	_, err := kube.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err) && len(drivers) > 0:
		return setDrivers(ctx, kube, node.Name, drivers)
	case err != nil && !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating CSINode %s: %w", node.Name, err)
	}
	return nil
}

// setDrivers puts entries into the node's CSINode, replacing older
// entries of the same drivers as kubelet does on re-registration.
func setDrivers(ctx context.Context, kube kubernetes.Interface, name string, entries []storagev1.CSINodeDriver) error {
	return updateCSINode(ctx, kube, name, func(drivers []storagev1.CSINodeDriver) []storagev1.CSINodeDriver {
		out := slices.Clone(entries)
		for _, d := range drivers {
			if !slices.ContainsFunc(entries, func(e storagev1.CSINodeDriver) bool { return e.Name == d.Name }) {
				out = append(out, d)
			}
		}
		return out
	})
}

// updateCSINode rewrites the node's CSINode drivers under its
// resourceVersion, retrying on conflict; no change, no write.
func updateCSINode(ctx context.Context, kube kubernetes.Interface, name string, change func([]storagev1.CSINodeDriver) []storagev1.CSINodeDriver) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		csiNode, err := kube.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		drivers := change(slices.Clone(csiNode.Spec.Drivers))
		if equality.Semantic.DeepEqual(drivers, csiNode.Spec.Drivers) {
			return nil
		}
		csiNode.Spec.Drivers = drivers
		_, err = kube.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
		return err
	})
}

// entries are the CSINode entries of infos.
func entries(infos []driverInfo) []storagev1.CSINodeDriver {
	var out []storagev1.CSINodeDriver
	for _, di := range infos {
		entry := storagev1.CSINodeDriver{Name: di.driver, NodeID: di.info.GetNodeId(), TopologyKeys: topologyKeys(di.info)}
		if n := di.info.GetMaxVolumesPerNode(); n > 0 {
			entry.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(min(n, 1<<31-1)))}
		}
		out = append(out, entry)
	}
	return out
}

func topologyKeys(info *csi.NodeGetInfoResponse) []string {
	keys := slices.Collect(maps.Keys(info.GetAccessibleTopology().GetSegments()))
	sort.Strings(keys)
	return keys
}

// patchNode adds the plugins' segments to the node's labels and their
// node IDs to the nodeid annotation in one patch, leaving every other
// label alone. The annotation is one JSON map with an entry per driver,
// as kubelet keeps it, so it is read, extended and written back under the
// node's resourceVersion: a concurrent writer makes the patch conflict
// and retry, with the node read again, instead of dropping another
// driver's entry. The first try uses cached, when given (the informer's
// copy): at start that saves a read per node.
func patchNode(ctx context.Context, kube kubernetes.Interface, name string, cached *v1.Node, infos []driverInfo) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := cached
		cached = nil
		if node == nil {
			var err error
			if node, err = kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		patch, err := nodePatch(node, infos)
		if err != nil {
			return err
		}
		_, err = kube.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// nodePatch is the strategic merge patch that registers infos on node.
func nodePatch(node *v1.Node, infos []driverInfo) ([]byte, error) {
	ids := map[string]string{}
	if raw := node.Annotations[NodeIDAnnotation]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &ids); err != nil {
			return nil, fmt.Errorf("annotation %s of node %s: %w", NodeIDAnnotation, node.Name, err)
		}
	}
	labels := map[string]string{}
	for _, di := range infos {
		ids[di.driver] = di.info.GetNodeId()
		maps.Copy(labels, di.info.GetAccessibleTopology().GetSegments())
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": node.ResourceVersion,
		"labels":          labels,
		"annotations":     map[string]string{NodeIDAnnotation: string(idsJSON)},
	}})
}
