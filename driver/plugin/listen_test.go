package plugin

import (
	"os"
	"path/filepath"
	"testing"
)

// TestListenSocketMode: the socket lets its group connect, so sidecars
// running as another user in the driver's fsGroup can reach it, and
// nobody else.
func TestListenSocketMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "csi.sock")
	lis, err := listen("unix://" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != SocketMode {
		t.Errorf("socket mode %v, want %v", got, SocketMode)
	}
}
