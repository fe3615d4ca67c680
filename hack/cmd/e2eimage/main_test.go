package main

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

// TestRunAll: without arguments every known image resolves to one
// ID=name:tag line, in the framework's registry for test images.
func TestRunAll(t *testing.T) {
	var out strings.Builder
	if err := run(nil, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(known) {
		t.Fatalf("%d lines for %d known images:\n%s", len(lines), len(known), out.String())
	}
	for _, line := range lines {
		id, ref, ok := strings.Cut(line, "=")
		if _, isKnown := known[id]; !ok || !isKnown {
			t.Errorf("line %q: not ID=name:tag of a known ID", line)
			continue
		}
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil || tag.TagStr() == "" || !strings.HasPrefix(ref, "registry.k8s.io/") {
			t.Errorf("%s: %q is not a tagged registry.k8s.io name (%v)", id, ref, err)
		}
	}
}

func TestRunNamed(t *testing.T) {
	tests := []struct {
		args    []string
		want    []string // prefixes of the lines
		wantErr string
	}{
		{args: []string{"BusyBox"}, want: []string{"registry.k8s.io/e2e-test-images/busybox:"}},
		{args: []string{"Agnhost", "Nginx"}, want: []string{"registry.k8s.io/e2e-test-images/agnhost:", "registry.k8s.io/e2e-test-images/nginx:"}},
		{args: []string{"BusyBox", "Busybox"}, wantErr: `unknown image "Busybox"`},
	}
	for _, tc := range tests {
		var out strings.Builder
		err := run(tc.args, &out)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || out.Len() > 0 {
				t.Errorf("%v: err %v, output %q; want error %q and no output", tc.args, err, out.String(), tc.wantErr)
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if err != nil || len(lines) != len(tc.want) {
			t.Fatalf("%v: %v, output %q", tc.args, err, out.String())
		}
		for i, prefix := range tc.want {
			if !strings.HasPrefix(lines[i], prefix) {
				t.Errorf("%v: line %d %q, want prefix %q", tc.args, i, lines[i], prefix)
			}
		}
	}
}
