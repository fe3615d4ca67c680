package yamlfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zonepath/zonepath/internal/wanterr"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(data []byte) (string, error) {
		if string(data) != "ok" {
			return "", errors.New("zones[0]: bad")
		}
		return "parsed " + string(data), nil
	}
	refuse := func([]byte) (string, error) { return "", errors.New("zones[0]: bad") }
	tests := []struct {
		name, path string
		parse      func([]byte) (string, error)
		want       string
		wantErr    string
	}{
		{name: "parsed", path: good, parse: parse, want: "parsed ok"},
		{name: "missing", path: filepath.Join(dir, "missing.yaml"), parse: parse,
			wantErr: "reading topology file: open " + filepath.Join(dir, "missing.yaml") + ": no such file"},
		{name: "refused", path: good, parse: refuse, wantErr: "topology file " + good + ": zones[0]: bad"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Load("topology file", tc.path, tc.parse)
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if got != tc.want {
				t.Errorf("Load() = %q, want %q", got, tc.want)
			}
		})
	}
}
