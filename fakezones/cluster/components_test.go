package cluster

import "testing"

// TestNodeLeaseSeconds: kubelet's 40 s for small clusters, then a tenth
// of a second per node, so that kwok's renewals stay about 40 a second.
func TestNodeLeaseSeconds(t *testing.T) {
	for _, tc := range []struct{ nodes, want int }{{6, 40}, {400, 40}, {1020, 102}, {5010, 501}} {
		if got := nodeLeaseSeconds(tc.nodes); got != tc.want {
			t.Errorf("nodeLeaseSeconds(%d) = %d, want %d", tc.nodes, got, tc.want)
		}
	}
}
