package objects

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/zonepath/zonepath/fakezones/spec"
)

func cluster(t *testing.T) *spec.Cluster {
	t.Helper()
	cl, err := spec.File{Zones: 2, NodesPerZone: 1, ExtraDrivers: []spec.ExtraDriver{{Name: "extra.csi.dev"}}}.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestClassesPerDriver: every driver has its classes, zonepath's first.
func TestClassesPerDriver(t *testing.T) {
	cl := cluster(t)
	var storage, snapshot []string
	for _, sc := range StorageClasses(cl) {
		storage = append(storage, sc.Name)
	}
	for _, vsc := range SnapshotClasses(cl) {
		snapshot = append(snapshot, vsc.GetName())
	}
	want := []string{"zonepath", "zonepath-zone-a", "zonepath-wffc", "zonepath-wffc-zone-a",
		"extra.csi.dev", "extra.csi.dev-zone-a", "extra.csi.dev-wffc", "extra.csi.dev-wffc-zone-a"}
	if diff := cmp.Diff(want, storage); diff != "" {
		t.Errorf("StorageClasses (-want +got):\n%s", diff)
	}
	want = []string{"zonepath", "zonepath-zone-a", "zonepath-region", "extra.csi.dev", "extra.csi.dev-zone-a", "extra.csi.dev-region"}
	if diff := cmp.Diff(want, snapshot); diff != "" {
		t.Errorf("SnapshotClasses (-want +got):\n%s", diff)
	}
}

// TestInstallStorage: installing twice is no error (AlreadyExists is
// success); any other error stops the install and names the object.
func TestInstallStorage(t *testing.T) {
	cl := cluster(t)
	kube := fake.NewClientset()
	for range 2 {
		if err := InstallStorage(context.Background(), Clients{Kube: kube}, cl); err != nil {
			t.Fatalf("InstallStorage: %v", err)
		}
	}
	classes, _ := kube.StorageV1().StorageClasses().List(context.Background(), metav1.ListOptions{})
	drivers, _ := kube.StorageV1().CSIDrivers().List(context.Background(), metav1.ListOptions{})
	if len(classes.Items) != 8 || len(drivers.Items) != 2 {
		t.Errorf("%d StorageClasses and %d CSIDrivers, want 8 and 2", len(classes.Items), len(drivers.Items))
	}

	broken := fake.NewClientset()
	broken.PrependReactor("create", "storageclasses", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	err := InstallStorage(context.Background(), Clients{Kube: broken}, cl)
	if err == nil || !strings.Contains(err.Error(), "creating StorageClass zonepath: quota exceeded") {
		t.Fatalf("InstallStorage with a failing API = %v, want the StorageClass named", err)
	}
}

func TestVolumeSnapshotClass(t *testing.T) {
	for _, class := range []string{"", "zonepath-region"} {
		vs := VolumeSnapshot("ns", "snap", "pvc", class)
		got, found, _ := unstructured.NestedString(vs.Object, "spec", "volumeSnapshotClassName")
		if got != class || found != (class != "") {
			t.Errorf("VolumeSnapshot(class %q) has class %q (set: %v): an empty class must be left out for the driver's default", class, got, found)
		}
		if pvc, _, _ := unstructured.NestedString(vs.Object, "spec", "source", "persistentVolumeClaimName"); pvc != "pvc" || vs.GetNamespace() != "ns" {
			t.Errorf("VolumeSnapshot(class %q) = %v", class, vs.Object)
		}
	}
}

// TestClassesUseTheDriversKeys: the classes' topology terms carry the keys
// the driver reports, the region left out when it reports none, and nodes
// lose the well-known labels when the cluster file says so.
func TestClassesUseTheDriversKeys(t *testing.T) {
	cases := []struct {
		name, doc   string
		wantKeys    []string
		wantClasses int
	}{
		{"defaults", "zones: 2\n", []string{"topology.kubernetes.io/region", "topology.kubernetes.io/zone"}, 3},
		{"prefixed", "driver:\n  topology:\n    keys: {region: topology.zonepath.csi.dev/region, zone: topology.zonepath.csi.dev/zone}\n",
			[]string{"topology.zonepath.csi.dev/region", "topology.zonepath.csi.dev/zone"}, 3},
		{"zone only: no region key, no region class", "driver:\n  topology:\n    keys: {omitRegion: true}\n", []string{"topology.kubernetes.io/zone"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := load(t, tc.doc)
			var got []string
			for _, e := range StorageClasses(cl)[1].AllowedTopologies[0].MatchLabelExpressions {
				got = append(got, e.Key)
			}
			if diff := cmp.Diff(tc.wantKeys, got); diff != "" {
				t.Errorf("StorageClass keys (-want +got):\n%s", diff)
			}
			classes := SnapshotClasses(cl)
			terms, _, _ := unstructured.NestedSlice(classes[1].Object, "allowedTopologies")
			exprs := terms[0].(map[string]any)["matchLabelExpressions"].([]any)
			got = nil
			for _, e := range exprs {
				got = append(got, e.(map[string]any)["key"].(string))
			}
			if diff := cmp.Diff(tc.wantKeys, got); diff != "" {
				t.Errorf("VolumeSnapshotClass keys (-want +got):\n%s", diff)
			}
			if len(classes) != tc.wantClasses {
				t.Errorf("%d VolumeSnapshotClasses, want %d", len(classes), tc.wantClasses)
			}
		})
	}
	for doc, want := range map[string]bool{"zones: 1\n": true, "zones: 1\nwellKnownNodeLabels: false\n": false} {
		n := Node(load(t, doc).Nodes[0])
		if _, has := n.Labels[ZoneLabel]; has != want || n.Labels["kubernetes.io/hostname"] != n.Name {
			t.Errorf("%q: node labels %v, want the zone label %t", doc, n.Labels, want)
		}
	}
}

func load(t *testing.T, doc string) *spec.Cluster {
	t.Helper()
	var f spec.File
	if err := yaml.UnmarshalStrict([]byte(doc), &f); err != nil {
		t.Fatal(err)
	}
	cl, err := f.Expand()
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestNodeControllerAttach: the cluster file's controllerAttachDetach puts
// kubelet's controller-managed-attach-detach annotation on every node, so
// that the attach-detach controller makes VolumeAttachments for them;
// without it no node has it.
func TestNodeControllerAttach(t *testing.T) {
	for doc, want := range map[string]bool{
		"zones: 2\n": false,
		"zones: 2\ncontrollerAttachDetach: false\n": false,
		"zones: 2\ncontrollerAttachDetach: true\n":  true,
	} {
		for _, sn := range load(t, doc).Nodes {
			n := Node(sn)
			v, has := n.Annotations[ControllerAttachAnnotation]
			if has != want || (has && v != "true") || n.Annotations[KwokAnnotation] != "fake" {
				t.Errorf("%q: node %s annotations %v, want %s %t and kwok's", doc, n.Name, n.Annotations, ControllerAttachAnnotation, want)
			}
		}
	}
}
