package resizer

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

const ns = "test"

// claim is a bound claim asking for request, with capacity recorded. It
// has no storage-resizer annotation: kube-controller-manager sets none on
// claims of (non-migrated) CSI volumes.
func claim(request, capacity string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns, UID: "claim-uid", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(request)}},
			VolumeName:  "pv-data",
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(capacity)}},
	}
}

// volume is the claim's CSI volume of testDriver, of size.
func volume(size string, block bool) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-data", ResourceVersion: "1"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			ClaimRef:    &v1.ObjectReference{Namespace: ns, Name: "data", UID: "claim-uid"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: testDriver, VolumeHandle: "vol-1", FSType: "ext4"}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	if block {
		mode := v1.PersistentVolumeBlock
		pv.Spec.VolumeMode = &mode
	}
	return pv
}

// harness runs a Controller on a fake clientset and a fake plugin.
type harness struct {
	t    *testing.T
	kube *fake.Clientset
	csi  *fakeCSI
}

// start runs the controller on objs until the test ends, with no
// resync.
func start(t *testing.T, f *fakeCSI, objs ...runtime.Object) *harness {
	t.Helper()
	return startResync(t, f, 0, objs...)
}

// startResync is start with informers that resync every period.
func startResync(t *testing.T, f *fakeCSI, period time.Duration, objs ...runtime.Object) *harness {
	t.Helper()
	kube := fake.NewClientset(objs...)
	conn := serveCSI(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	caps, err := Probe(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(kube, NewExpander(conn, caps), Options{
		DriverName: testDriver, Timeout: 5 * time.Second, Workers: 2,
		RetryIntervalStart: 50 * time.Millisecond, RetryIntervalMax: time.Second, ResyncPeriod: period,
	})
	if err != nil {
		t.Fatal(err)
	}
	if caps.Modify {
		if err := c.EnableModify(NewModifier(conn)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &harness{t: t, kube: kube, csi: f}
}

// claim and volume read the objects back.
func (h *harness) claim() *v1.PersistentVolumeClaim {
	h.t.Helper()
	pvc, err := h.kube.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return pvc
}

func (h *harness) volume() *v1.PersistentVolume {
	h.t.Helper()
	pv, err := h.kube.CoreV1().PersistentVolumes().Get(context.Background(), "pv-data", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return pv
}

// eventually polls cond for a few seconds and fails with what it says.
func (h *harness) eventually(what string, cond func() (bool, string)) {
	h.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		h.t.Fatalf("%s: never happened; last: %s", what, last)
	}
}

// events are the claim's events as "type reason: message".
func (h *harness) events() []string {
	h.t.Helper()
	list, err := h.kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason+": "+e.Message)
	}
	return out
}

// waitEvent waits for an event of the claim containing sub.
func (h *harness) waitEvent(sub string) {
	h.t.Helper()
	h.eventually("event "+sub, func() (bool, string) {
		evs := h.events()
		return slices.ContainsFunc(evs, func(e string) bool { return strings.Contains(e, sub) }), strings.Join(evs, "\n")
	})
}

// setRequest is the user editing the claim's request.
func (h *harness) setRequest(size string) {
	h.t.Helper()
	patch := `{"spec":{"resources":{"requests":{"storage":"` + size + `"}}}}`
	if _, err := h.kube.CoreV1().PersistentVolumeClaims(ns).Patch(context.Background(), "data", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func quantity(l v1.ResourceList) string {
	q := l[v1.ResourceStorage]
	return q.String()
}

func hasCondition(pvc *v1.PersistentVolumeClaim, t v1.PersistentVolumeClaimConditionType) bool {
	return slices.ContainsFunc(pvc.Status.Conditions, func(c v1.PersistentVolumeClaimCondition) bool {
		return c.Type == t && c.Status == v1.ConditionTrue
	})
}
