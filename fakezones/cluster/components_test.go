package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zonepath/zonepath/fakezones/spec"
)

// TestNodeLeaseSeconds: kubelet's 40 s for small clusters, then a tenth
// of a second per node, so that kwok's renewals stay about 40 a second.
func TestNodeLeaseSeconds(t *testing.T) {
	for _, tc := range []struct{ nodes, want int }{{6, 40}, {400, 40}, {1020, 102}, {5010, 501}} {
		if got := nodeLeaseSeconds(tc.nodes); got != tc.want {
			t.Errorf("nodeLeaseSeconds(%d) = %d, want %d", tc.nodes, got, tc.want)
		}
	}
}

// MaxBackoff reaches every component that backs off: the
// snapshot-controller and each sidecar get --retry-interval-max, the
// provisioner also its orphan sweep; without it nothing changes.
func TestMaxBackoff(t *testing.T) {
	for _, tc := range []struct {
		backoff time.Duration
		want    map[string][]string
	}{
		{backoff: 20 * time.Second, want: map[string][]string{
			"snapshot-controller": {"--retry-interval-max=20s"},
			"provisioner":         {"--retry-interval-max=20s", "--snapshot-orphan-sweep-interval=20s"},
			"snapshotter":         {"--retry-interval-max=20s"},
			"attacher":            {"--retry-interval-max=20s"},
			"resizer":             {"--retry-interval-max=20s"},
		}},
		{backoff: 0, want: map[string][]string{"snapshot-controller": nil, "provisioner": nil, "snapshotter": nil, "attacher": nil, "resizer": nil}},
	} {
		u := &up{o: Options{BinDir: t.TempDir(), MaxBackoff: tc.backoff}, w: &workDir{dir: "/work"}}
		for _, c := range append(u.sidecars(), u.snapshotController()) {
			var got []string
			for _, a := range c.args {
				if strings.HasPrefix(a, "--retry-interval-max") || strings.HasPrefix(a, "--snapshot-orphan-sweep-interval") {
					got = append(got, a)
				}
			}
			if !slices.Equal(got, tc.want[c.name]) {
				t.Errorf("MaxBackoff %v: %s gets %v, want %v", tc.backoff, c.name, got, tc.want[c.name])
			}
		}
	}
}

// TestExtraDriverStrictTopology: an extra driver's strictTopology gives
// its provisioner, and nothing else, --strict-topology.
func TestExtraDriverStrictTopology(t *testing.T) {
	cl := &spec.Cluster{File: spec.File{ExtraDrivers: []spec.ExtraDriver{{Name: "strict.dev", StrictTopology: true}, {Name: "loose.dev"}}}}
	u := &up{o: Options{BinDir: t.TempDir(), Cluster: cl}, w: &workDir{dir: "/work"}}
	for _, c := range u.extraDrivers() {
		want := c.name == "strict.dev-provisioner"
		if got := slices.Contains(c.args, "--strict-topology"); got != want {
			t.Errorf("%s: --strict-topology %v, want %v (args %v)", c.name, got, want, c.args)
		}
	}
}
