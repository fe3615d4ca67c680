package resizer

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// TestVolumeGetterNeverOlderThanOwnWrite: a claim re-queued by its own
// status update may be synced before the volume informer has seen the
// capacity this controller wrote; the getter must then answer the written
// capacity, or the volume is expanded a second time.
func TestVolumeGetterNeverOlderThanOwnWrite(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cached    string // the informer's capacity
		written   string // the controller's last write; "" none
		want      string
		forgotten bool // the write is forgotten once the cache shows it
	}{
		{name: "no write", cached: "1Gi", want: "1Gi"},
		{name: "cache lags the write", cached: "1Gi", written: "2Gi", want: "2Gi"},
		{name: "cache caught up", cached: "2Gi", written: "2Gi", want: "2Gi", forgotten: true},
		{name: "cache beyond the write", cached: "3Gi", written: "2Gi", want: "3Gi", forgotten: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"},
				Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(tc.cached)}}}
			if err := idx.Add(pv); err != nil {
				t.Fatal(err)
			}
			g := &volumeGetter{lister: corelisters.NewPersistentVolumeLister(idx), written: map[string]resource.Quantity{}}
			if tc.written != "" {
				g.wrote("pv", resource.MustParse(tc.written))
			}
			got, err := g.Get("pv")
			if err != nil {
				t.Fatal(err)
			}
			if q := got.Spec.Capacity[v1.ResourceStorage]; q.Cmp(resource.MustParse(tc.want)) != 0 {
				t.Errorf("capacity %s, want %s", q.String(), tc.want)
			}
			if q := pv.Spec.Capacity[v1.ResourceStorage]; q.Cmp(resource.MustParse(tc.cached)) != 0 {
				t.Errorf("the cached object was changed to %s", q.String())
			}
			if _, kept := g.written["pv"]; kept == tc.forgotten && tc.written != "" {
				t.Errorf("write kept: %v, want %v", kept, !tc.forgotten)
			}
		})
	}
}
