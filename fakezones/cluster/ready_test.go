package cluster

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/zonepath/zonepath/fakezones/spec"
)

func TestCountReadiness(t *testing.T) {
	cl, err := spec.File{Zones: 1, NodesPerZone: 4, ExtraDrivers: []spec.ExtraDriver{{Name: "extra.dev"}},
		Nodes: []spec.NodeOverride{{Name: "node-a-3", Registration: spec.NoDriver}, {Name: "node-a-4", Registration: spec.NoCSINode}}}.Expand()
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string, ready v1.ConditionStatus) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue}, {Type: v1.NodeReady, Status: ready}}}}
	}
	csiNode := func(name string, drivers ...string) *storagev1.CSINode {
		cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, d := range drivers {
			cn.Spec.Drivers = append(cn.Spec.Drivers, storagev1.CSINodeDriver{Name: d})
		}
		return cn
	}
	want := wantedReadiness(cl)
	if want != (readiness{ready: 4, csiNodes: 3, registered: 2}) {
		t.Fatalf("wanted = %+v", want)
	}
	for _, tc := range []struct {
		name     string
		nodes    []*v1.Node
		csiNodes []*storagev1.CSINode
		want     readiness
	}{
		{name: "nothing yet"},
		{name: "not ready, one driver of two, a stranger's CSINode",
			nodes:    []*v1.Node{node("node-a-1", v1.ConditionTrue), node("node-a-2", v1.ConditionFalse)},
			csiNodes: []*storagev1.CSINode{csiNode("node-a-1", "zonepath.csi.dev"), csiNode("other")},
			want:     readiness{ready: 1, csiNodes: 1}},
		{name: "all there, and a CSINode the file does not want is not counted",
			nodes: []*v1.Node{node("node-a-1", v1.ConditionTrue), node("node-a-2", v1.ConditionTrue), node("node-a-3", v1.ConditionTrue), node("node-a-4", v1.ConditionTrue)},
			csiNodes: []*storagev1.CSINode{csiNode("node-a-1", "zonepath.csi.dev", "extra.dev"), csiNode("node-a-2", "extra.dev", "zonepath.csi.dev"),
				csiNode("node-a-3"), csiNode("node-a-4")},
			want: want},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countReadiness(tc.nodes, tc.csiNodes, cl); got != tc.want {
				t.Errorf("got %s", got.String(tc.want))
			}
		})
	}
}

func TestReadyOnlyKeepsTheReadyCondition(t *testing.T) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeDiskPressure}, {Type: v1.NodeReady, Status: v1.ConditionTrue}}}}
	got, err := readyOnly(n)
	if err != nil {
		t.Fatal(err)
	}
	slim := got.(*v1.Node)
	if slim.Name != "n" || slim.Labels != nil || len(slim.Status.Conditions) != 1 || !isReady(slim.Status.Conditions[0]) {
		t.Errorf("slim node = %+v", slim)
	}
}
