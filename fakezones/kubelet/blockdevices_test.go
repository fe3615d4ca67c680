package kubelet

import (
	"path/filepath"
	"testing"

	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// TestPluginsKeepBlockFiles: the stand-in's node plugins bind-mount block
// volumes' files and attach no loop devices, even where they could (as
// root): nothing here runs a container that needs a device node.
func TestPluginsKeepBlockFiles(t *testing.T) {
	dir := t.TempDir()
	d := Driver{Name: plugin.DefaultName, SocketDir: dir, StateDir: filepath.Join(dir, "state"), DataDir: filepath.Join(dir, "data")}
	n := spec.Node{Name: "n1", Region: "region-1", Zone: "zone-a"}
	p, err := newPlugin(Config{Topology: world.Default()}, d, n, "auto")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got := p.BlockDevicesKind(); got != plugin.BlockDevicesFile {
		t.Errorf("block devices of a fake node's plugin: %q, want %q", got, plugin.BlockDevicesFile)
	}
}
