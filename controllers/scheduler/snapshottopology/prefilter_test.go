package snapshottopology

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/zonepath/zonepath/controllers/snapshotapi"
)

// bound marks a PVC bound to a volume.
func bound(c *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	c.Spec.VolumeName = "pv-" + c.Name
	c.Status.Phase = v1.ClaimBound
	return c
}

// changed is the PVC c with its spec changed by f.
func changed(c *v1.PersistentVolumeClaim, f func(*v1.PersistentVolumeClaimSpec)) *v1.PersistentVolumeClaim {
	f(&c.Spec)
	return c
}

// pvcRef is an unbound PVC restoring from snapshot through dataSourceRef
// alone, in namespace when one is given (a cross-namespace reference).
func pvcRef(name, snapshot string, namespace *string) *v1.PersistentVolumeClaim {
	return changed(pvc(name, ""), func(s *v1.PersistentVolumeClaimSpec) {
		s.DataSourceRef = &v1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.SnapshotKind, Name: snapshot, Namespace: namespace}
	})
}

// preProvisioned turns a content into one made from an existing snapshot:
// handle in spec, no status yet.
func preProvisioned(u *unstructured.Unstructured) *unstructured.Unstructured {
	spec := u.Object["spec"].(map[string]any)
	spec["source"] = map[string]any{"snapshotHandle": "existing"}
	delete(u.Object, "status")
	return u
}

// uncut turns a content into one whose snapshot the driver has not cut.
func uncut(u *unstructured.Unstructured) *unstructured.Unstructured {
	delete(u.Object, "status")
	return u
}

func TestPreFilter(t *testing.T) {
	ephPod := podWith("eph", ephemeralVol("data", "snap"))
	tests := []struct {
		name string
		pod  *v1.Pod
		objs []runtime.Object
		// wantCode is the PreFilter status code; wantReason, if set, must
		// equal the status' only reason.
		wantCode   fwk.Code
		wantReason string
		// want lists the cached constraints as claim=content:terms.
		want []string
		// crossNamespace: Kubernetes' CrossNamespaceVolumeDataSource gate.
		crossNamespace bool
	}{{
		name:     "no volumes",
		pod:      podWith("p"),
		wantCode: fwk.Skip,
	}, {
		name:     "PVC without data source",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{pvc("c", "")},
		wantCode: fwk.Skip,
	}, {
		name: "PVC cloned from another PVC",
		pod:  podWith("p", claimVol("c")),
		objs: []runtime.Object{changed(pvc("c", ""), func(s *v1.PersistentVolumeClaimSpec) {
			s.DataSource = &v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "other"}
		})},
		wantCode: fwk.Skip,
	}, {
		name:     "bound PVC from a snapshot is ignored",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{bound(pvc("c", "snap")), vs("snap", "content"), vsc("content", "snap", zones("a"))},
		wantCode: fwk.Skip,
	}, {
		name:     "PVC with volumeName but not yet Bound is ignored",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{changed(pvc("c", "snap"), func(s *v1.PersistentVolumeClaimSpec) { s.VolumeName = "pv" }), vs("snap", "content"), vsc("content", "snap", zones("a"))},
		wantCode: fwk.Skip,
	}, {
		name:     "dataSource resolves and caches the terms",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a", "b"), term(regionKey, []string{"r2"}, zoneKey, []string{"x"}))},
		wantCode: fwk.Success,
		want:     []string{"c=content:[{topology.kubernetes.io/zone in [a b]} {topology.kubernetes.io/region in [r2], topology.kubernetes.io/zone in [x]}]"},
	}, {
		name:     "dataSourceRef only",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{pvcRef("c", "snap", nil), vs("snap", "content"), vsc("content", "snap", zones("a"))},
		wantCode: fwk.Success,
		want:     []string{"c=content:[{topology.kubernetes.io/zone in [a]}]"},
	}, {
		name:       "dataSourceRef in another namespace, gate off: refused, naming nothing there",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvcRef("c", "snap", ptr.To("foreign")), foreign(vs("snap", "content")), foreign(vsc("content", "snap", zones("secret")))},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `PersistentVolumeClaim "default/c": its dataSourceRef names a VolumeSnapshot in another namespace, which is refused: the CrossNamespaceVolumeDataSource feature gate is off`,
	}, {
		name:           "dataSourceRef in another namespace, no ReferenceGrant: refused, naming nothing there",
		pod:            podWith("p", claimVol("c")),
		objs:           []runtime.Object{pvcRef("c", "snap", ptr.To("foreign")), foreign(vs("snap", "content")), foreign(vsc("content", "snap", zones("secret"))), grant("elsewhere")},
		crossNamespace: true,
		wantCode:       fwk.UnschedulableAndUnresolvable,
		wantReason:     `PersistentVolumeClaim "default/c": its dataSourceRef names a VolumeSnapshot in another namespace, which is refused: no ReferenceGrant there allows it`,
	}, {
		name:           "dataSourceRef in another namespace, granted",
		pod:            podWith("p", claimVol("c")),
		objs:           []runtime.Object{pvcRef("c", "snap", ptr.To("foreign")), foreign(vs("snap", "content")), foreign(vsc("content", "snap", zones("secret"))), grant(ns)},
		crossNamespace: true,
		wantCode:       fwk.Success,
		want:           []string{"c=content:[{topology.kubernetes.io/zone in [secret]}]"},
	}, {
		name: "dataSourceRef wins over dataSource",
		pod:  podWith("p", claimVol("c")),
		objs: []runtime.Object{changed(pvcRef("c", "snap", nil), func(s *v1.PersistentVolumeClaimSpec) { s.DataSource = snapshotRef("wrong") }),
			vs("snap", "content"), vsc("content", "snap", zones("a"))},
		wantCode: fwk.Success,
		want:     []string{"c=content:[{topology.kubernetes.io/zone in [a]}]"},
	}, {
		name: "kind VolumeSnapshot of another group is not followed",
		pod:  podWith("p", claimVol("c")),
		objs: []runtime.Object{changed(pvc("c", "snap"), func(s *v1.PersistentVolumeClaimSpec) {
			s.DataSource.APIGroup = ptr.To("example.com")
		})},
		wantCode: fwk.Skip,
	}, {
		name:     "generic ephemeral volume",
		pod:      ephPod,
		objs:     []runtime.Object{ownedBy(pvc("eph-data", "snap"), ephPod), vs("snap", "content"), vsc("content", "snap", zones("a"))},
		wantCode: fwk.Success,
		want:     []string{"eph-data=content:[{topology.kubernetes.io/zone in [a]}]"},
	}, {
		name:       "generic ephemeral volume whose PVC another pod owns",
		pod:        ephPod,
		objs:       []runtime.Object{pvc("eph-data", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a"))},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: "PVC default/eph-data was not created for pod default/eph (pod is not owner)",
	}, {
		name:       "missing PVC",
		pod:        podWith("p", claimVol("c")),
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `PersistentVolumeClaim "default/c" not found`,
	}, {
		name:       "missing VolumeSnapshot",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap")},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshot "default/snap" not found`,
	}, {
		name:       "VolumeSnapshot not bound",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap"), vs("snap", "")},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshot "default/snap" is not bound to a VolumeSnapshotContent yet`,
	}, {
		name:       "missing VolumeSnapshotContent",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap"), vs("snap", "content")},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshotContent "content" of VolumeSnapshot "default/snap" not found`,
	}, {
		name:       "content bound to another snapshot",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "other", zones("a"))},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshotContent "content" of VolumeSnapshot "default/snap" is bound to VolumeSnapshot "default/other" (uid "uid-other"), not to this one (uid "uid-snap")`,
	}, {
		name:       "content whose snapshot is not cut yet",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap"), vs("snap", "content"), uncut(vsc("content", "snap"))},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshotContent "content" of VolumeSnapshot "default/snap" has no snapshot handle yet, so the snapshot's topology is not known`,
	}, {
		name:     "pre-provisioned content is cut",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{pvc("c", "snap"), vs("snap", "content"), preProvisioned(vsc("content", "snap", zones("a")))},
		wantCode: fwk.Success,
		want:     []string{"c=content:[{topology.kubernetes.io/zone in [a]}]"},
	}, {
		name:       "malformed nodeAffinity: no values",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones())},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshotContent "content" of VolumeSnapshot "default/snap" has a malformed spec.nodeAffinity: invalid topology term: terms[0].matchLabelExpressions[0].values: must not be empty (key "topology.kubernetes.io/zone")`,
	}, {
		// The CRD schema rejects these shapes; a content written before the
		// schema did is refused the same way the snapshotter and the
		// provisioner refuse it, not read as "no node".
		name:       "malformed nodeAffinity: a key twice in a term",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", term(zoneKey, []string{"a"}, zoneKey, []string{"b"}))},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshotContent "content" of VolumeSnapshot "default/snap" has a malformed spec.nodeAffinity: invalid topology term: terms[0].matchLabelExpressions[1].key "topology.kubernetes.io/zone": duplicate of matchLabelExpressions[0]`,
	}, {
		name:       "malformed nodeAffinity: an empty term",
		pod:        podWith("p", claimVol("c")),
		objs:       []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", zones("a"), term())},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshotContent "content" of VolumeSnapshot "default/snap" has a malformed spec.nodeAffinity: invalid topology term: terms[1].matchLabelExpressions: must not be empty (an empty term selects no node)`,
	}, {
		name: "malformed nodeAffinity: not a list",
		pod:  podWith("p", claimVol("c")),
		objs: []runtime.Object{pvc("c", "snap"), vs("snap", "content"), with(vsc("content", "snap"), func(o map[string]any) {
			o["spec"].(map[string]any)["nodeAffinity"] = "zone-a"
		})},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshotContent "content" of VolumeSnapshot "default/snap" has a malformed spec.nodeAffinity: VolumeSnapshotContent "content": field [spec nodeAffinity]: is string, not a list of topology selector terms`,
	}, {
		name:     "no nodeAffinity restricts nothing",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap")},
		wantCode: fwk.Skip,
	}, {
		name:     "empty nodeAffinity restricts nothing",
		pod:      podWith("p", claimVol("c")),
		objs:     []runtime.Object{pvc("c", "snap"), vs("snap", "content"), vsc("content", "snap", []any{}...)},
		wantCode: fwk.Skip,
	}, {
		name: "three PVCs, one unrestricted",
		pod:  podWith("p", claimVol("c1"), claimVol("c2"), claimVol("c3"), claimVol("plain")),
		objs: []runtime.Object{
			pvc("c1", "s1"), vs("s1", "k1"), vsc("k1", "s1", term(regionKey, []string{"r1"})),
			pvc("c2", "s2"), vs("s2", "k2"), vsc("k2", "s2"),
			pvc("c3", "s3"), vs("s3", "k3"), vsc("k3", "s3", zones("b", "c")),
			pvc("plain", ""),
		},
		wantCode: fwk.Success,
		want: []string{
			"c1=k1:[{topology.kubernetes.io/region in [r1]}]",
			"c3=k3:[{topology.kubernetes.io/zone in [b c]}]",
		},
	}, {
		name: "one failing PVC fails the pod",
		pod:  podWith("p", claimVol("c1"), claimVol("c2")),
		objs: []runtime.Object{
			pvc("c1", "s1"), vs("s1", "k1"), vsc("k1", "s1", zones("a")),
			pvc("c2", "s2"),
		},
		wantCode:   fwk.UnschedulableAndUnresolvable,
		wantReason: `VolumeSnapshot "default/s2" not found`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvOpts(t, envOpts{gate: true, crossNamespace: tc.crossNamespace}, tc.objs...)
			cs := framework.NewCycleState()
			_, st := e.pl.PreFilter(context.Background(), cs, tc.pod, nil)
			if st.Code() != tc.wantCode {
				t.Fatalf("PreFilter: got %v %q, want %v", st.Code(), st.Reasons(), tc.wantCode)
			}
			if tc.wantReason != "" && !slices.Equal(st.Reasons(), []string{tc.wantReason}) {
				t.Errorf("PreFilter reasons:\n got %q\nwant %q", st.Reasons(), tc.wantReason)
			}
			if got := cachedConstraints(cs); !slices.Equal(got, tc.want) {
				t.Errorf("cached constraints:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func cachedConstraints(cs fwk.CycleState) []string {
	s, err := readState(cs)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range s.constraints {
		out = append(out, fmt.Sprintf("%s=%s:%s", c.claim, c.content, describe(c.terms)))
	}
	return out
}

// TestUnrelatedPodsUnaffected: a pod whose snapshot is missing is
// rejected while a pod without snapshot sources, in the same scheduler,
// is skipped and schedulable.
func TestUnrelatedPodsUnaffected(t *testing.T) {
	e := newEnv(t, pvc("broken", "gone"), pvc("plain", ""))
	ctx := context.Background()
	_, st, _ := e.fw.RunPreFilterPlugins(ctx, framework.NewCycleState(), podWith("a", claimVol("broken")))
	if st.Code() != fwk.UnschedulableAndUnresolvable || !strings.Contains(st.Message(), `VolumeSnapshot "default/gone" not found`) {
		t.Errorf("pod with a missing snapshot: got %v %q, want UnschedulableAndUnresolvable naming the snapshot", st.Code(), st.Message())
	}
	for _, pod := range []*v1.Pod{podWith("b", claimVol("plain")), podWith("c")} {
		cs := framework.NewCycleState()
		if _, st, _ := e.fw.RunPreFilterPlugins(ctx, cs, pod); !st.IsSuccess() {
			t.Errorf("pod %s: PreFilter got %v %q, want success", pod.Name, st.Code(), st.Message())
		}
		if !cs.GetSkipFilterPlugins().Has(Name) {
			t.Errorf("pod %s: Filter of %s not skipped", pod.Name, Name)
		}
		if st := e.fw.RunFilterPlugins(ctx, cs, pod, nodeInfo("n", nil)); !st.IsSuccess() {
			t.Errorf("pod %s: Filter got %v %q, want success", pod.Name, st.Code(), st.Message())
		}
	}
}
