package features

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// VolumeSnapshotTopology turns on KEP-5943: VolumeSnapshotClass
// allowedTopologies become CreateSnapshot accessibility requirements, the
// snapshot's accessible topology is written to VolumeSnapshotContent
// spec.nodeAffinity, the provisioner intersects it with a StorageClass's
// allowedTopologies for Immediate binding, and the SnapshotTopology
// scheduler plugin filters nodes by it. Off, none of them writes or
// enforces anything new, and nodeAffinity already stored is left alone.
const VolumeSnapshotTopology featuregate.Feature = "VolumeSnapshotTopology"

// specs is alpha since 1.36, the release the KEP targets, so that the gate
// exists at every emulation version the 1.37 components accept.
var specs = map[featuregate.Feature]featuregate.VersionedSpecs{
	VolumeSnapshotTopology: {
		{Version: version.MajorMinor(1, 36), Default: false, PreRelease: featuregate.Alpha},
	},
}

func init() {
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(specs))
}

// Enabled reports whether VolumeSnapshotTopology is on in the process's
// default gate.
func Enabled() bool {
	return utilfeature.DefaultFeatureGate.Enabled(VolumeSnapshotTopology)
}
