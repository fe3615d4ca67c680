package snapshottopology

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func zoneNode(region, zone string) map[string]string {
	return map[string]string{regionKey: region, zoneKey: zone, "kubernetes.io/hostname": "h"}
}

func TestFilter(t *testing.T) {
	type node struct {
		name   string
		labels map[string]string
		// wantReason is empty for a node that passes.
		wantReason string
	}
	outsideAB := `node(s) outside the topology of VolumeSnapshot "default/snap" (content "content"): [{topology.kubernetes.io/zone in [a b]}]`
	tests := []struct {
		name  string
		pod   *v1.Pod
		objs  []runtime.Object
		nodes []node
	}{{
		name: "one PVC, zones a and b", pod: podWith("p", claimVol("c")),
		objs: []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a", "b"))},
		nodes: []node{
			{"in the first term's zone", zoneNode("r1", "a"), ""},
			{"in the second term's zone", zoneNode("r1", "b"), ""},
			{"in another zone", zoneNode("r1", "c"), outsideAB},
			{"without topology labels", nil, outsideAB},
		},
	}, {
		// Segments {r1,a} and {r2,b}, converted losslessly: {r2,a} is outside.
		name: "one PVC, segments r1/a and r2/b", pod: podWith("p", claimVol("c")),
		objs: []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap",
			term(regionKey, []string{"r1"}, zoneKey, []string{"a"}),
			term(regionKey, []string{"r2"}, zoneKey, []string{"b"}))},
		nodes: []node{
			{"segment r1/a", zoneNode("r1", "a"), ""},
			{"segment r2/b", zoneNode("r2", "b"), ""},
			{"r2/a is not a segment", zoneNode("r2", "a"), `node(s) outside the topology of VolumeSnapshot "default/snap" (content "content"): [{topology.kubernetes.io/region in [r1], topology.kubernetes.io/zone in [a]} {topology.kubernetes.io/region in [r2], topology.kubernetes.io/zone in [b]}]`},
		},
	}, {
		// AND across three PVCs: region r1, zone a|b, zone b|c: only r1/b.
		name: "three PVCs", pod: podWith("p", claimVol("c1"), claimVol("c2"), claimVol("c3")),
		objs: []runtime.Object{
			pvc("c1", "s1"), vs("s1", "k1"), vsc("k1", "s1", term(regionKey, []string{"r1"})),
			pvc("c2", "s2"), vs("s2", "k2"), vsc("k2", "s2", zones("a", "b")),
			pvc("c3", "s3"), vs("s3", "k3"), vsc("k3", "s3", zones("b", "c")),
		},
		nodes: []node{
			{"r1/b satisfies all", zoneNode("r1", "b"), ""},
			{"r1/a fails the third", zoneNode("r1", "a"), `node(s) outside the topology of VolumeSnapshot "default/s3" (content "k3"): [{topology.kubernetes.io/zone in [b c]}]`},
			{"r1/c fails the second", zoneNode("r1", "c"), `node(s) outside the topology of VolumeSnapshot "default/s2" (content "k2"): [{topology.kubernetes.io/zone in [a b]}]`},
			{"r2/b fails the first", zoneNode("r2", "b"), `node(s) outside the topology of VolumeSnapshot "default/s1" (content "k1"): [{topology.kubernetes.io/region in [r1]}]`},
		},
	}, {
		// A held deletion still restores (external-provisioner goes on
		// while the finalizers hold it), but the reason says it.
		name: "snapshot and content being deleted", pod: podWith("p", claimVol("c")),
		objs: []runtime.Object{pvc("c", "snap"), beingDeleted(vs("snap", "content")), beingDeleted(vsc("content", "snap", zones("a")))},
		nodes: []node{
			{"in the zone", zoneNode("r1", "a"), ""},
			{"in another zone", zoneNode("r1", "b"), `node(s) outside the topology of VolumeSnapshot "default/snap" (content "content"; VolumeSnapshot and VolumeSnapshotContent being deleted): [{topology.kubernetes.io/zone in [a]}]`},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name+": PreFilter narrows to the nodes that pass", func(t *testing.T) {
			e := newEnv(t, tc.objs...)
			var infos []fwk.NodeInfo
			var want []string
			for _, n := range tc.nodes {
				infos = append(infos, nodeInfo(n.name, n.labels))
				if n.wantReason == "" {
					want = append(want, n.name)
				}
			}
			res, st := e.pl.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, infos)
			if !st.IsSuccess() || res == nil || !res.NodeNames.Equal(sets.New(want...)) {
				t.Errorf("PreFilter: %v %q, result %v; want success and nodes %v", st.Code(), st.Reasons(), res, want)
			}
		})
		for _, n := range tc.nodes {
			t.Run(tc.name+": "+n.name, func(t *testing.T) {
				e := newEnv(t, tc.objs...)
				ctx := context.Background()
				cs := framework.NewCycleState()
				if _, st := e.pl.PreFilter(ctx, cs, tc.pod, nil); !st.IsSuccess() {
					t.Fatalf("PreFilter: %v %q", st.Code(), st.Reasons())
				}
				st := e.pl.Filter(ctx, cs, tc.pod, nodeInfo("n", n.labels))
				if n.wantReason == "" {
					if !st.IsSuccess() {
						t.Errorf("Filter: got %v %q, want success", st.Code(), st.Reasons())
					}
					return
				}
				if st.Code() != fwk.UnschedulableAndUnresolvable || !slices.Equal(st.Reasons(), []string{n.wantReason}) {
					t.Errorf("Filter:\n got %v %q\nwant UnschedulableAndUnresolvable %q", st.Code(), st.Reasons(), n.wantReason)
				}
			})
		}
	}
}

// TestFilterEmptyNodeAffinity: a content without nodeAffinity restricts
// no node, whether Filter runs on PreFilter's state or on an empty one.
func TestFilterEmptyNodeAffinity(t *testing.T) {
	e := newEnv(t, pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap"))
	ctx := context.Background()
	pod := podWith("p", claimVol("c"))
	if _, st := e.pl.PreFilter(ctx, framework.NewCycleState(), pod, nil); st.Code() != fwk.Skip {
		t.Errorf("PreFilter: got %v, want Skip", st.Code())
	}
	cs := framework.NewCycleState()
	cs.Write(stateKey, newState([]source{{claim: "c", content: "content"}}))
	for _, labels := range []map[string]string{nil, zoneNode("r1", "a")} {
		if st := e.pl.Filter(ctx, cs, pod, nodeInfo("n", labels)); !st.IsSuccess() {
			t.Errorf("Filter(%v): got %v %q, want success", labels, st.Code(), st.Reasons())
		}
	}
}

func TestFilterWithoutPreFilter(t *testing.T) {
	pl := &Plugin{enabled: true}
	st := pl.Filter(context.Background(), framework.NewCycleState(), podWith("p"), nodeInfo("n", nil))
	if st.Code() != fwk.Error || !strings.Contains(st.Message(), "enabled at PreFilter") {
		t.Errorf("got %v %q, want an Error saying PreFilter did not run", st.Code(), st.Message())
	}
}

// TestFilterStatusesAreDistinct: the framework writes the plugin name into
// every rejection, concurrently for many nodes, so each must be its own
// Status while the shared reasons stay untouched.
func TestFilterStatusesAreDistinct(t *testing.T) {
	s := newState([]source{{claim: "c", content: "k", terms: mustTerms(zones("a"))}})
	cs := framework.NewCycleState()
	cs.Write(stateKey, s)
	pl := &Plugin{enabled: true}
	a := pl.Filter(context.Background(), cs, podWith("p"), nodeInfo("n1", nil))
	b := pl.Filter(context.Background(), cs, podWith("p"), nodeInfo("n2", nil))
	if a == b {
		t.Fatal("Filter returned one Status for two nodes")
	}
	a.AppendReason("extra")
	if got := b.Reasons(); len(got) != 1 {
		t.Errorf("appending to one status changed another: %q", got)
	}
	if got := s.constraints[0].reasons; len(got) != 1 || cap(got) != 1 {
		t.Errorf("shared reasons changed: %q (cap %d)", got, cap(got))
	}
}

// TestPreFilterNoNodeInside: when no node is inside a snapshot's
// topology PreFilter does not narrow the search, so that Filter rejects
// every node with the reason naming the snapshot rather than the
// framework's "didn't satisfy plugin".
func TestPreFilterNoNodeInside(t *testing.T) {
	e := newEnv(t, pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a")))
	nodes := []fwk.NodeInfo{nodeInfo("n1", zoneNode("r1", "b")), nodeInfo("n2", zoneNode("r1", "c"))}
	res, st := e.pl.PreFilter(context.Background(), framework.NewCycleState(), podWith("p", claimVol("c")), nodes)
	if !st.IsSuccess() || res != nil {
		t.Errorf("PreFilter: %v %q, result %v; want success and no result", st.Code(), st.Reasons(), res)
	}
}

// TestPreFilterNarrowsOnlyWhereThePodMayGo: PreFilter narrows the search
// to the nodes inside the snapshot's topology only when one of them also
// satisfies the pod's own required node affinity. Otherwise the
// framework would report every node outside as merely "didn't satisfy
// plugin(s) [SnapshotTopology]", and the pod's FailedScheduling event
// would no longer name the snapshot (the e2e suite's scenarios 3, 6, 7
// and 10 pin a pod outside its snapshot's topology and check that).
func TestPreFilterNarrowsOnlyWhereThePodMayGo(t *testing.T) {
	objs := []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a"))}
	nodes := []fwk.NodeInfo{nodeInfo("in-a", zoneNode("r1", "a")), nodeInfo("in-b", zoneNode("r1", "b"))}
	pinned := func(zone string) *v1.Pod {
		p := podWith("p", claimVol("c"))
		p.Spec.NodeSelector = map[string]string{zoneKey: zone}
		return p
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		want []string // nil: no narrowing
	}{
		{"no affinity of its own", podWith("p", claimVol("c")), []string{"in-a"}},
		{"pinned inside the topology", pinned("a"), []string{"in-a"}},
		{"pinned outside the topology", pinned("b"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, objs...)
			res, st := e.pl.PreFilter(context.Background(), framework.NewCycleState(), tc.pod, nodes)
			if !st.IsSuccess() {
				t.Fatalf("PreFilter: %v %q", st.Code(), st.Reasons())
			}
			if tc.want == nil {
				if !res.AllNodes() {
					t.Errorf("PreFilter narrowed to %v; want no node set, so that Filter's reasons name the snapshot", sets.List(res.NodeNames))
				}
				return
			}
			if res.AllNodes() || !res.NodeNames.Equal(sets.New(tc.want...)) {
				t.Errorf("PreFilter result %v; want nodes %v", res, tc.want)
			}
		})
	}
}
