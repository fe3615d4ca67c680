package kubelet

import (
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNodePatch: one patch carries every driver's segment and node ID,
// keeps the IDs of drivers registered before, and is bound to the
// resourceVersion it was computed from.
func TestNodePatch(t *testing.T) {
	info := func(id, zone string) *csi.NodeGetInfoResponse {
		return &csi.NodeGetInfoResponse{NodeId: id, AccessibleTopology: &csi.Topology{Segments: map[string]string{"topology.kubernetes.io/zone": zone}}}
	}
	node := func(annotation string) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a-1", ResourceVersion: "7"}}
		if annotation != "" {
			n.Annotations = map[string]string{NodeIDAnnotation: annotation}
		}
		return n
	}
	for _, tc := range []struct {
		name    string
		node    *v1.Node
		infos   []driverInfo
		want    string
		wantErr string
	}{
		{name: "two drivers at once", node: node(""), infos: []driverInfo{{"a.dev", info("n1", "zone-a")}, {"b.dev", info("n1", "zone-a")}},
			want: `{"metadata":{"annotations":{"csi.volume.kubernetes.io/nodeid":"{\"a.dev\":\"n1\",\"b.dev\":\"n1\"}"},"labels":{"topology.kubernetes.io/zone":"zone-a"},"resourceVersion":"7"}}`},
		{name: "another driver's ID kept", node: node(`{"other.dev":"x"}`), infos: []driverInfo{{"a.dev", info("n1", "zone-b")}},
			want: `{"metadata":{"annotations":{"csi.volume.kubernetes.io/nodeid":"{\"a.dev\":\"n1\",\"other.dev\":\"x\"}"},"labels":{"topology.kubernetes.io/zone":"zone-b"},"resourceVersion":"7"}}`},
		{name: "annotation not JSON", node: node(`nope`), infos: []driverInfo{{"a.dev", info("n1", "zone-a")}},
			wantErr: "annotation csi.volume.kubernetes.io/nodeid of node node-a-1: invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nodePatch(tc.node, tc.infos)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("patch = %s (%v)\nwant    %s", got, err, tc.want)
			}
		})
	}
}
