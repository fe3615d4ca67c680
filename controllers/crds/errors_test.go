package crds

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExtendErrors(t *testing.T) {
	up := upstreamDir(t)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the --from dir
		want  []string                              // substrings of the error
	}{
		{"missing directory", func(t *testing.T, dir string) string { return filepath.Join(dir, "nope") },
			[]string{"reading the upstream CRD directory", "nope", "no such file"}},
		{"empty directory", func(t *testing.T, dir string) string { return dir },
			[]string{"not the external-snapshotter CRD directory", ContentsCRD, ClassesCRD}},
		{"one CRD missing", func(t *testing.T, dir string) string {
			copyUpstream(t, up, dir)
			rm(t, filepath.Join(dir, "groupsnapshot.storage.k8s.io_volumegroupsnapshots.yaml"))
			return dir
		}, []string{"missing CRDs volumegroupsnapshots.groupsnapshot.storage.k8s.io"}},
		{"malformed YAML", func(t *testing.T, dir string) string {
			copyUpstream(t, up, dir)
			write(t, filepath.Join(dir, "broken.yaml"), "kind: [unterminated\n")
			return dir
		}, []string{"broken.yaml", "not a YAML manifest"}},
		{"multi-document file", func(t *testing.T, dir string) string {
			copyUpstream(t, up, dir)
			write(t, filepath.Join(dir, "two.yaml"), "kind: A\n---\nkind: B\n")
			return dir
		}, []string{"two.yaml", "2 YAML documents"}},
		{"field already upstream", func(t *testing.T, dir string) string {
			if _, err := Generate(up, dir); err != nil {
				t.Fatal(err)
			}
			return dir
		}, []string{"volumesnapshotclasses.yaml", "allowedTopologies already exists upstream"}},
		{"unknown CRD field", func(t *testing.T, dir string) string {
			copyUpstream(t, up, dir)
			p := filepath.Join(dir, "snapshot.storage.k8s.io_volumesnapshotclasses.yaml")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			write(t, p, strings.Replace(string(data), "spec:\n", "spec:\n  futureField: 1\n", 1))
			return dir
		}, []string{"volumesnapshotclasses.yaml", "decoding CustomResourceDefinition", "futureField"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Extend(tc.setup(t, t.TempDir()))
			if err == nil {
				t.Fatal("Extend succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestWriteErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	write(t, file, "x")
	err := Write(filepath.Join(file, "sub"), []File{{Name: "a.yaml", Data: []byte("a")}})
	if err == nil || !strings.Contains(err.Error(), "creating the output directory") {
		t.Errorf("Write under a file: error %v, want one about the output directory", err)
	}
}

func copyUpstream(t *testing.T, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(to, e.Name()), string(data))
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rm(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
