package features

import (
	"testing"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

func TestVolumeSnapshotTopologyIsAlphaAndOff(t *testing.T) {
	if Enabled() {
		t.Fatal("VolumeSnapshotTopology is on by default; an alpha gate must be off")
	}
	spec, ok := utilfeature.DefaultFeatureGate.DeepCopy().GetAll()[VolumeSnapshotTopology]
	if !ok {
		t.Fatal("VolumeSnapshotTopology is not registered")
	}
	if spec.PreRelease != "ALPHA" || spec.Default {
		t.Fatalf("spec = %+v, want alpha, default off", spec)
	}
}

func TestSetThroughFlag(t *testing.T) {
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	gate.AddFlag(fs)
	if err := fs.Parse([]string{"--feature-gates=VolumeSnapshotTopology=true"}); err != nil {
		t.Fatal(err)
	}
	if !gate.Enabled(VolumeSnapshotTopology) {
		t.Fatal("--feature-gates=VolumeSnapshotTopology=true did not turn the gate on")
	}
}

func TestSetDuringTest(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, VolumeSnapshotTopology, true)
	if !Enabled() {
		t.Fatal("Enabled() = false with the gate set")
	}
}
