package plugin

import (
	"os"
	"testing"
)

// TestProbeMaxFileSizeOncePerDirectory: a second plugin on the same data
// directory takes the first one's answer without probing again, so it
// works even where it could not create the probe file.
func TestProbeMaxFileSizeOncePerDirectory(t *testing.T) {
	dir := t.TempDir()
	first, err := probeMaxFileSize(dir, 1<<30)
	if err != nil || first != 1<<30 {
		t.Fatalf("first probe = %d, %v; want %d", first, err, 1<<30)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if again, err := probeMaxFileSize(dir, 1<<30); err != nil || again != first {
		t.Errorf("second probe = %d, %v; want the first's %d", again, err, first)
	}
	if _, err := probeMaxFileSize(dir, 1<<20); err == nil {
		t.Error("a probe with another limit must probe, and fail in a removed directory")
	}
}
