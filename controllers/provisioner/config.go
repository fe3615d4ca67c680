package provisioner

import (
	"time"

	"github.com/kubernetes-csi/csi-lib-utils/standardflags"
)

// Config is what zonepath-provisioner's flags set. The names and defaults
// follow csi-provisioner's flags of the same name, so a deployment of the
// upstream sidecar can switch to this binary without changing arguments
// (except those of features this binary leaves out: node deployment and
// CSI migration).
type Config struct {
	// Sidecar holds the flags every CSI sidecar shares: --csi-address,
	// --kubeconfig, --leader-election*, --kube-api-qps/burst,
	// --http-endpoint, --metrics-address, --metrics-path.
	Sidecar standardflags.SidecarConfiguration

	Timeout                     time.Duration
	VolumeNamePrefix            string
	VolumeNameUUIDLength        int
	ExtraCreateMetadata         bool
	WorkerThreads               uint
	CloningProtectionThreads    uint
	SnapshotOrphanSweepInterval time.Duration
	RetryIntervalStart          time.Duration
	RetryIntervalMax            time.Duration
	DefaultFSType               string
	StrictTopology              bool
	ImmediateTopology           bool
	ControllerPublishReadOnly   bool
	PreventVolumeModeConversion bool

	// Capacity tracking (capacity.go): --enable-capacity and the flags
	// that tune it.
	EnableCapacity              bool
	CapacityOwnerrefLevel       int
	CapacityPollInterval        time.Duration
	CapacityForImmediateBinding bool
	CapacityThreads             uint
	KubeAPICapacityQPS          float32
	KubeAPICapacityBurst        int
}
