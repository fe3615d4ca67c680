package render

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// deployDir is deploy/, this package's parent.
const deployDir = ".."

// expectFor is what an overlay's name promises.
func expectFor(dir string) Expect {
	switch filepath.Base(dir) {
	case "gate-on", "kind":
		return Expect{Gate: "true"}
	case "gate-off":
		return Expect{Gate: "false"}
	}
	return Expect{}
}

// TestEveryKustomization renders every kustomization under deploy/ as
// kubectl apply -k would and checks it.
func TestEveryKustomization(t *testing.T) {
	dirs, err := Kustomizations(deployDir)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must find at least these, or a broken walk would pass.
	for _, want := range []string{"crds", "base", "overlays/gate-on", "overlays/gate-off",
		"overlays/scheduler-replacement", "overlays/registrar-sidecar", "overlays/kind",
		"overlays/kind-nocap", "overlays/kind-gate-off"} {
		if !slices.Contains(dirs, filepath.Join(deployDir, want)) {
			t.Errorf("Kustomizations(%s) = %v, missing %s", deployDir, dirs, want)
		}
	}
	for _, dir := range dirs {
		t.Run(strings.TrimPrefix(dir, deployDir+"/"), func(t *testing.T) {
			objs, err := Render(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(objs, expectFor(dir)); err != nil {
				t.Error(err)
			}
			t.Logf("%d objects", len(objs))
		})
	}
}

// TestTaggedKind renders the kind overlay the way make kind-e2e tags it
// (hack/deploy-tag.sh): no :latest may be left.
func TestTaggedKind(t *testing.T) {
	if err := Check(renderTagged(t), Expect{Gate: "true", Tag: "v0.0.0-render"}); err != nil {
		t.Error(err)
	}
}

// renderTagged renders the kind overlay as make kind-e2e deploys it:
// tagged v0.0.0-render by hack/deploy-tag.sh, with its further flags.
func renderTagged(t *testing.T, flags ...string) []*Object {
	t.Helper()
	out := t.TempDir()
	args := append([]string{filepath.Join(deployDir, "overlays/kind"), "v0.0.0-render", out}, flags...)
	if b, err := exec.Command("../../hack/deploy-tag.sh", args...).CombinedOutput(); err != nil {
		t.Fatalf("hack/deploy-tag.sh: %v\n%s", err, b)
	}
	objs, err := Render(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestUpstreamSwap renders the kind overlay with an upstream component in
// zonepath's place, as make kind-e2e PROVISIONER_IMAGE=...
// KIND_E2E_COMPONENTS=upstream-provisioner does: the image is swapped,
// the flag upstream does not know is gone, the other sidecars keep theirs.
func TestUpstreamSwap(t *testing.T) {
	const ref = "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0"
	objs := renderTagged(t, "--image", "localhost/zonepath/zonepath-provisioner="+ref,
		"--component", filepath.Join(deployDir, "components/upstream-provisioner"))
	gates := map[string]bool{}
	for _, o := range objs {
		d, ok := o.Typed.(*appsv1.Deployment)
		if !ok || d.Name != "zonepath-controller" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			gates[c.Name] = slices.Contains(c.Args, "--feature-gates=$(FEATURE_GATES)")
			if c.Name == "zonepath-provisioner" && c.Image != ref {
				t.Errorf("zonepath-provisioner runs %s, want %s", c.Image, ref)
			}
		}
	}
	if want := map[string]bool{"zonepath": false, "zonepath-provisioner": false, "zonepath-snapshotter": true}; !maps.Equal(
		map[string]bool{"zonepath": gates["zonepath"], "zonepath-provisioner": gates["zonepath-provisioner"], "zonepath-snapshotter": gates["zonepath-snapshotter"]}, want) {
		t.Errorf("containers with --feature-gates: %v, want %v", gates, want)
	}
}

// TestChecksFail shows each check failing on a broken kustomization.
func TestChecksFail(t *testing.T) {
	cases := []struct {
		dir    string
		expect Expect
		// renderErr: the render itself fails; else Check does.
		renderErr bool
		want      string
	}{
		{dir: "unknown-field", renderErr: true, want: `unknown field "spec.template.spec.containers[0].imagePullPolcy"`},
		{dir: "missing-serviceaccount", want: "[serviceaccounts] Deployment zonepath-system/snapshot-controller: serviceAccountName snapshot-controler: no such ServiceAccount"},
		{dir: "wrong-image", want: "[images] Deployment zonepath-system/zonepath-controller container csi-attacher: image registry.k8s.io/sig-storage/csi-attacher:v4.12.0 is none of the agreed"},
		{dir: "gate-on-attacher", want: "[feature-gates] Deployment zonepath-system/zonepath-controller container csi-attacher: --feature-gates sets VolumeSnapshotTopology, which registry.k8s.io/sig-storage/csi-attacher:v4.13.0 does not have"},
		{dir: "gate-mixed", want: "[feature-gates] VolumeSnapshotTopology differs between components: false in Deployment zonepath-system/zonepath-controller container zonepath-snapshotter; true in"},
		{dir: "gate-off", expect: Expect{Gate: "true"}, want: "[feature-gates] Deployment zonepath-system/zonepath-controller container zonepath-provisioner: VolumeSnapshotTopology=false, want true"},
		{dir: "selector", want: "[selectors] Deployment zonepath-system/zonepath-controller: selector app.kubernetes.io/name=zonepath-controller does not match its pod template's labels"},
		{dir: "driver-name", want: "[driver-names] StorageClass zonepath-zone-b: provisioner zonepath.csi.io, but the CSIDriver is zonepath.csi.dev"},
		{dir: "zone-typo", want: "[topology] VolumeSnapshotClass zonepath-zone-c: allowedTopologies[0]:"},
		{dir: "missing-configmap", want: "[references] DaemonSet zonepath-system/zonepath-node: volume topology: no ConfigMap zonepath-system/zonepath-topo in the render"},
		{dir: "scheduler-kube-lease", want: "[scheduler-config] Deployment zonepath-system/zonepath-scheduler container zonepath-scheduler: --config=/etc/zonepath-scheduler/config.yaml: a second scheduler holding kube-scheduler's lease"},
		{dir: "scheduler-no-plugin", want: "profile zonepath-scheduler does not enable SnapshotTopology"},
		{dir: "registration-twice", want: "[registration] DaemonSet zonepath-system/zonepath-node: the node plugin registers itself and through node-driver-registrar"},
		{dir: "registrar-drift", renderErr: true, want: "testing value /spec/template/spec/containers/0/args/11 failed"},
		{dir: "../../base", expect: Expect{Tag: "v1.0.0"}, want: "[images] Deployment zonepath-system/zonepath-controller container zonepath: image localhost/zonepath/zonepath:latest: tag latest, want v1.0.0"},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			objs, err := Render(filepath.Join("testdata", tc.dir))
			if !tc.renderErr {
				if err != nil {
					t.Fatalf("render: %v", err)
				}
				err = Check(objs, tc.expect)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error:\n%v\nwant one containing:\n%s", err, tc.want)
			}
			t.Logf("fails as it should:\n%v", err)
		})
	}
}

// TestMissingCRDs: without make crds, rendering says what to run.
func TestMissingCRDs(t *testing.T) {
	root := t.TempDir()
	for path, content := range map[string]string{
		"crds/kustomization.yaml": "resources: [x.yaml]\n",
		"base/kustomization.yaml": "resources: [../crds]\n",
	} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Render(filepath.Join(root, "base"))
	if err == nil || !strings.Contains(err.Error(), "deploy/crds/x.yaml is missing: run make crds") {
		t.Fatalf("got %v, want the missing CRD and make crds named", err)
	}
}

// TestSchedulerBeforeV137 renders the kind overlay as the v1.35 and v1.36
// jobs of .github/workflows/kind-e2e.yaml deploy it
// (KIND_E2E_COMPONENTS=scheduler-before-1.37) and as the v1.37 job does:
// only with the component does zonepath-scheduler, and no other
// container, run with DRADeviceTaintRules=false, beside the same
// VolumeSnapshotTopology as every other component, and does the CSIDriver
// leave out preventPodSchedulingIfMissing, a field v1.35's API lacks.
func TestSchedulerBeforeV137(t *testing.T) {
	for _, tc := range []struct {
		name       string
		components []string
		want       map[string]string // container → its DRADeviceTaintRules
	}{
		{"v1.37", nil, map[string]string{}},
		{"before v1.37", []string{"scheduler-before-1.37"}, map[string]string{"zonepath-scheduler": "false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var flags []string
			for _, c := range tc.components {
				flags = append(flags, "--component", filepath.Join(deployDir, "components", c))
			}
			objs := renderTagged(t, flags...)
			if err := Check(objs, Expect{Gate: "true", Tag: "v0.0.0-render"}); err != nil {
				t.Error(err)
			}
			r := index(objs)
			got := map[string]string{}
			for _, w := range r.workloads {
				for _, c := range w.containers() {
					gates, _, err := r.featureGates(w, c)
					if err != nil {
						t.Fatal(err)
					}
					if v, ok := gates["DRADeviceTaintRules"]; ok {
						got[c.Name] = v
					}
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("containers setting DRADeviceTaintRules: %v, want %v", got, tc.want)
			}
			drivers := 0
			for _, o := range objs {
				if d, ok := o.Typed.(*storagev1.CSIDriver); ok {
					drivers++
					if set := d.Spec.PreventPodSchedulingIfMissing != nil; set != (len(tc.components) == 0) {
						t.Errorf("CSIDriver %s sets preventPodSchedulingIfMissing: %t; v1.35's API lacks it", d.Name, set)
					}
				}
			}
			if drivers == 0 {
				t.Error("no CSIDriver in the render")
			}
		})
	}
}
