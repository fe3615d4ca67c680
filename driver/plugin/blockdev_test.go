package plugin

import (
	"errors"
	"strings"
	"testing"
)

// TestNewBlockDevices: which mode each setting gives, with and without
// bind mounts and with a loop probe that works or fails. Loop devices are
// placed by bind mounts, so asking for them without is an error at start,
// and auto then settles for files.
func TestNewBlockDevices(t *testing.T) {
	defer func(old func(string) error) { probeLoop = old }(probeLoop)
	for _, c := range []struct {
		mode    string
		mounter mounter
		probe   error
		want    string // "" : an error
	}{
		{BlockDevicesFile, bindMounter{}, nil, BlockDevicesFile},
		{BlockDevicesFile, pathMounter{}, nil, BlockDevicesFile},
		{BlockDevicesLoop, bindMounter{}, errors.New("not probed: loop is not auto"), BlockDevicesLoop},
		{BlockDevicesLoop, pathMounter{}, nil, ""},
		{BlockDevicesAuto, bindMounter{}, nil, BlockDevicesLoop},
		{"", bindMounter{}, nil, BlockDevicesLoop},
		{BlockDevicesAuto, bindMounter{}, errors.New("no /dev/loop-control"), BlockDevicesFile},
		{BlockDevicesAuto, pathMounter{}, nil, BlockDevicesFile},
		{"losetup", bindMounter{}, nil, ""},
	} {
		probeLoop = func(string) error { return c.probe }
		b, err := newBlockDevices(c.mode, c.mounter, t.TempDir(), "node-1")
		got := ""
		if err == nil {
			got = b.kind()
		}
		if got != c.want {
			t.Errorf("mode %q with %s mounts, probe %v: %q (%v), want %q", c.mode, c.mounter.kind(), c.probe, got, err, c.want)
		}
	}
}

// TestControllerChecksBlockDevices: a controller alone places nothing, so
// it probes nothing, but a misspelt mode is still refused at start.
func TestControllerChecksBlockDevices(t *testing.T) {
	for mode, ok := range map[string]bool{"": true, BlockDevicesLoop: true, BlockDevicesFile: true, BlockDevicesAuto: true, "loopy": false} {
		b, err := nodeBlockDevices(Config{BlockDevices: mode}, pathMounter{})
		if (err == nil) != ok || ok && b.kind() != BlockDevicesFile {
			t.Errorf("controller with block devices %q: %v, %v", mode, b, err)
		}
	}
}

// TestLoopOwner: a node's owner fits the kernel's 63 bytes, and distinct
// node IDs, long ones too, get distinct owners.
func TestLoopOwner(t *testing.T) {
	long := strings.Repeat("n", 253) // a DNS subdomain, the longest node name
	for _, c := range []struct{ a, b string }{
		{"node-1", "node-2"},
		{"zonepath-worker", "zonepath-worker2"},
		{long, long[:252] + "m"},
		{strings.Repeat("n", 54), strings.Repeat("n", 55)},
	} {
		oa, ob := loopOwner(c.a), loopOwner(c.b)
		if oa == ob || len(oa) > 63 || len(ob) > 63 || oa != loopOwner(c.a) {
			t.Errorf("owners of %q and %q: %q and %q; want distinct, stable, at most 63 bytes", c.a, c.b, oa, ob)
		}
	}
}
