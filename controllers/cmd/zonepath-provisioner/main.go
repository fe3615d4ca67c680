// Command zonepath-provisioner is csi-provisioner v6.3.0 with KEP-5943:
// with --feature-gates=VolumeSnapshotTopology=true, a PVC with Immediate
// binding restored from a snapshot is provisioned in snapshot nodeAffinity
// ∩ StorageClass allowedTopologies (see package controllers/provisioner).
//
// Upstream's command cannot be built inside this module, so this one
// parses the same flags and wires the same library; the wiring lives in
// the package, this file is flags only.
package main

import (
	"context"
	"time"

	flag "github.com/spf13/pflag"

	// Register workqueue and leader election metrics in the legacy
	// registry that --metrics-address serves, as csi-provisioner does.
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection"
	_ "k8s.io/component-base/metrics/prometheus/workqueue"

	"github.com/zonepath/zonepath/controllers/provisioner"
	"github.com/zonepath/zonepath/internal/bootstrap"
)

// version is stamped at build time with -ldflags "-X main.version=...".
var version = "devel"

func main() {
	var cfg provisioner.Config
	bootstrap.SidecarMain("zonepath-provisioner", version, &cfg.Sidecar,
		func(fs *flag.FlagSet) { addFlags(fs, &cfg) },
		func(ctx context.Context) error { return provisioner.Run(ctx, cfg) })
}

// addFlags registers csi-provisioner's own flags on fs, defaults included.
// --feature-gates (bootstrap) sets both our VolumeSnapshotTopology gate
// and upstream's own gates (Topology and VolumeAttributesClass, on by
// default as upstream has them).
func addFlags(fs *flag.FlagSet, c *provisioner.Config) {
	fs.DurationVar(&c.Timeout, "timeout", 10*time.Second, "Timeout of each CSI call (CreateVolume, DeleteVolume, probes).")
	fs.StringVar(&c.VolumeNamePrefix, "volume-name-prefix", "pvc", "Prefix of the name of a created volume.")
	fs.IntVar(&c.VolumeNameUUIDLength, "volume-name-uuid-length", -1, "Truncates the generated UUID of a created volume to this length; -1 keeps it whole.")
	fs.BoolVar(&c.ExtraCreateMetadata, "extra-create-metadata", false, "Add PV/PVC name and namespace to CreateVolume parameters.")
	fs.UintVar(&c.WorkerThreads, "worker-threads", 100, "Number of provisioner workers, i.e. simultaneous CSI calls.")
	fs.UintVar(&c.CloningProtectionThreads, "cloning-protection-threads", 1, "Number of workers removing clone-source finalizers.")
	fs.DurationVar(&c.SnapshotOrphanSweepInterval, "snapshot-orphan-sweep-interval", 5*time.Minute, "How often to remove orphaned snapshot source-protection finalizers; 0 disables.")
	fs.DurationVar(&c.RetryIntervalStart, "retry-interval-start", time.Second, "Initial retry interval of failed provisioning or deletion; doubles per failure up to --retry-interval-max.")
	fs.DurationVar(&c.RetryIntervalMax, "retry-interval-max", 5*time.Minute, "Maximum retry interval of failed provisioning or deletion.")
	fs.StringVar(&c.DefaultFSType, "default-fstype", "", "Filesystem type when the StorageClass sets none; empty passes none.")
	fs.BoolVar(&c.StrictTopology, "strict-topology", false, "Late binding: pass only the selected node's topology to CreateVolume.")
	fs.BoolVar(&c.ImmediateTopology, "immediate-topology", true, "Immediate binding without allowedTopologies: pass the topologies of all nodes with the driver (true) or none (false).")
	fs.BoolVar(&c.ControllerPublishReadOnly, "controller-publish-readonly", false, "Mark PVs read-only at ControllerPublishVolume when the PVC access mode is ReadOnlyMany.")
	fs.BoolVar(&c.PreventVolumeModeConversion, "prevent-volume-mode-conversion", true, "Refuse to change the volume mode when restoring a snapshot, unless its content allows it.")
	addCapacityFlags(fs, c)
}

// addCapacityFlags registers csi-provisioner's capacity tracking flags.
func addCapacityFlags(fs *flag.FlagSet, c *provisioner.Config) {
	fs.BoolVar(&c.EnableCapacity, "enable-capacity", false, "Publish CSIStorageCapacity objects, per topology segment and StorageClass, from the driver's GetCapacity; needs $NAMESPACE.")
	fs.IntVar(&c.CapacityOwnerrefLevel, "capacity-ownerref-level", 1, "Owner of the CSIStorageCapacity objects: this many owners up from the pod $POD_NAME in $NAMESPACE (-1 no owner, 0 the pod, 1 its StatefulSet/DaemonSet/ReplicaSet, 2 a Deployment).")
	fs.DurationVar(&c.CapacityPollInterval, "capacity-poll-interval", time.Minute, "How often to call GetCapacity again for every CSIStorageCapacity object.")
	fs.BoolVar(&c.CapacityForImmediateBinding, "capacity-for-immediate-binding", false, "Publish capacity for StorageClasses with Immediate binding too (the scheduler reads only WaitForFirstConsumer ones).")
	fs.UintVar(&c.CapacityThreads, "capacity-threads", 1, "Number of workers updating CSIStorageCapacity objects.")
	fs.Float32Var(&c.KubeAPICapacityQPS, "kube-api-capacity-qps", 1, "QPS of the API client that writes CSIStorageCapacity objects.")
	fs.IntVar(&c.KubeAPICapacityBurst, "kube-api-capacity-burst", 5, "Burst of the API client that writes CSIStorageCapacity objects.")
}
