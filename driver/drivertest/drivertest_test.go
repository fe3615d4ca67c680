package drivertest_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
)

const twoZones = `
regions:
- name: r
  zones: [{name: a}, {name: b}]
`

// TestStartRestart: a started driver answers as a CO connects to it, and
// a restarted one serves the same state.
func TestStartRestart(t *testing.T) {
	ctx := context.Background()
	d := drivertest.Start(t, drivertest.Options{World: twoZones})
	c := csi.NewControllerClient(d.Conn(t))
	vol, err := c.CreateVolume(ctx, drivertest.VolumeRequest("v", 1<<20, drivertest.Requisite(drivertest.Segment("topology.kubernetes.io/region", "r", "topology.kubernetes.io/zone", "b"))))
	if err != nil {
		t.Fatal(err)
	}
	d.Restart(t)
	c = csi.NewControllerClient(d.Conn(t))
	got, err := c.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: vol.GetVolume().GetVolumeId()})
	if err != nil || got.GetVolume().GetAccessibleTopology()[0].GetSegments()["topology.kubernetes.io/zone"] != "b" {
		t.Fatalf("after restart: %v, %v; want the volume in zone b", got, err)
	}
}

// TestOptions: fault rules and config changes reach the driver.
func TestOptions(t *testing.T) {
	d := drivertest.Start(t, drivertest.Options{
		Faults: "rules:\n- {name: down, match: {rpc: Probe}, action: {code: Unavailable}}\n",
		Config: func(c *plugin.Config) { c.Name = "other.csi.dev" },
	})
	conn := d.Conn(t)
	if _, err := csi.NewIdentityClient(conn).Probe(context.Background(), &csi.ProbeRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("Probe = %v, want the injected Unavailable", err)
	}
	info, err := csi.NewIdentityClient(conn).GetPluginInfo(context.Background(), &csi.GetPluginInfoRequest{})
	if err != nil || info.GetName() != "other.csi.dev" {
		t.Errorf("GetPluginInfo = %v, %v; want the changed name", info, err)
	}
}

// fatalRecorder stands in for a test, to see how Start fails.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " "))
	runtime.Goexit()
}

func (f *fatalRecorder) Fatal(args ...any) { f.Fatalf("%v", args...) }

// TestStartFailsClearly: bad input stops the test with a message saying
// what was wrong, never a panic.
func TestStartFailsClearly(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts drivertest.Options
		want string
	}{
		{"bad world", drivertest.Options{World: "regions: [{name: r}]"}, "drivertest: world: "},
		{"bad fault rule", drivertest.Options{Faults: "rules:\n- {name: x, match: {rpc: Nope}, action: {code: Aborted}}\n"},
			`drivertest: fault file `},
		{"no state directory", drivertest.Options{Config: func(c *plugin.Config) { c.StateDir = "" }}, "drivertest: a state directory is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fatalRecorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				drivertest.Start(rec, tc.opts)
			}()
			<-done
			if !strings.HasPrefix(rec.msg, tc.want) {
				t.Errorf("Start failed with %q, want it to start with %q", rec.msg, tc.want)
			}
		})
	}
}

// TestWorld: the shared world parses, with zone-c's limits where asked.
func TestWorld(t *testing.T) {
	for _, zoneC := range []string{"", "capacity: 2Gi, snapshotQuota: 1"} {
		topo, err := world.Parse([]byte(drivertest.World(zoneC)))
		if err != nil {
			t.Fatalf("World(%q): %v", zoneC, err)
		}
		if got := len(topo.Zones); got != 4 {
			t.Errorf("World(%q) has %d zones, want 4", zoneC, got)
		}
	}
	if _, err := world.Parse([]byte(drivertest.World("capacity: lots"))); err == nil {
		t.Error("World with a bad zone-c field parsed; it must not")
	}
}
