package main

import (
	"archive/tar"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testInput is a two-layer image like make images builds: the shared base,
// then a "binary".
func testInput(t *testing.T, ref, binary string) imageInput {
	t.Helper()
	base, err := baseLayer()
	if err != nil {
		t.Fatal(err)
	}
	lb := newLayerBuilder()
	lb.file("usr/local/bin/tool", 0o755, []byte(binary))
	lb.symlink("bin/sh", "/bin/busybox")
	bin, err := lb.finish("tool")
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	return imageInput{tag: tag, layers: []layer{base, bin}, config: v1.Config{
		Entrypoint: []string{"/usr/local/bin/tool"},
		User:       nonRoot,
		Labels:     map[string]string{labelVersion: "v1", labelLocalBuild: "yes"},
	}}
}

// TestWriteAndLoad writes a docker-archive and loads it back the way a
// consumer of make images' output does.
func TestWriteAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tool.tar")
	in := testInput(t, "localhost/zonepath/tool:v1", "#!binary")
	if wrote, err := in.write(path); err != nil || !wrote {
		t.Fatalf("first write: wrote=%t err=%v", wrote, err)
	}
	img, err := tarball.ImageFromPath(path, &in.tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/usr/local/bin/tool"}) || cf.Config.User != nonRoot ||
		cf.Config.Labels[labelLocalBuild] != "yes" || len(cf.RootFS.DiffIDs) != 2 {
		t.Errorf("config = %+v", cf)
	}
	files := extractedFiles(t, img)
	for _, want := range []string{"etc/passwd", "tmp", "home/nonroot", "usr/local/bin", "usr/local/bin/tool", "bin/sh"} {
		if _, ok := files[want]; !ok {
			t.Errorf("image lacks %s; has %v", want, slices.Sorted(func(yield func(string) bool) {
				for k := range files {
					if !yield(k) {
						return
					}
				}
			}))
		}
	}
	if h := files["tmp"]; h != nil && h.Mode != 0o1777 {
		t.Errorf("/tmp mode %o, want 1777", h.Mode)
	}
	if h := files["home/nonroot"]; h != nil && h.Uid != 65532 {
		t.Errorf("/home/nonroot owner %d, want 65532", h.Uid)
	}
	if h := files["usr/local/bin/tool"]; h != nil && (h.Mode != 0o755 || h.Uid != 0 || !h.ModTime.Equal(epoch)) {
		t.Errorf("tool header %+v", h)
	}
}

// TestWriteSkipsCurrent: the same inputs leave the tarball alone; another
// binary, label or tag rewrites it.
func TestWriteSkipsCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tool.tar")
	if _, err := testInput(t, "localhost/zonepath/tool:v1", "a").write(path); err != nil {
		t.Fatal(err)
	}
	relabelled := testInput(t, "localhost/zonepath/tool:v1", "a")
	relabelled.config.Labels[labelVersion] = "v2"
	tests := []struct {
		name string
		in   imageInput
		want bool
	}{
		{"same inputs", testInput(t, "localhost/zonepath/tool:v1", "a"), false},
		{"other binary", testInput(t, "localhost/zonepath/tool:v1", "b"), true},
		{"other label", relabelled, true},
		{"other tag", testInput(t, "localhost/zonepath/tool:v2", "b"), true},
	}
	for _, tc := range tests {
		wrote, err := tc.in.write(path)
		if err != nil || wrote != tc.want {
			t.Errorf("%s: wrote=%t err=%v, want wrote=%t", tc.name, wrote, err, tc.want)
		}
	}
}

func TestLayerReproducible(t *testing.T) {
	a, errA := baseLayer()
	b, errB := baseLayer()
	if errA != nil || errB != nil || a.diffID != b.diffID {
		t.Fatalf("two builds differ: %v %v (%v, %v)", a.diffID, b.diffID, errA, errB)
	}
	gz, err := a.v1Layer()
	if err != nil {
		t.Fatal(err)
	}
	got, err := gz.DiffID()
	if err != nil || got != a.diffID {
		t.Fatalf("recorded diff ID %v, layer's %v (%v)", a.diffID, got, err)
	}
}

// extractedFiles reads the image's flattened file system.
func extractedFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	files := map[string]*tar.Header{}
	walkImage(t, img, func(h *tar.Header, _ io.Reader) error {
		files[h.Name] = h
		return nil
	})
	return files
}

// walkImage calls fn for each entry of the image's flattened file system.
func walkImage(t *testing.T, img v1.Image, fn func(*tar.Header, io.Reader) error) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err == nil {
			err = fn(h, tr)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}
