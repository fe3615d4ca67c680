package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// allE2EImages is what hack/cmd/e2eimage prints for the stand-ins.
const allE2EImages = `Agnhost=registry.k8s.io/e2e-test-images/agnhost:2.66.1
BusyBox=registry.k8s.io/e2e-test-images/busybox:1.37.0-2
GlibcDnsTesting=registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1
Nginx=registry.k8s.io/e2e-test-images/nginx:1.27.0-2`

func TestParseE2EImages(t *testing.T) {
	tests := []struct {
		name, list, wantErr string
	}{
		{name: "all, one a line", list: allE2EImages},
		{name: "all, on one line", list: strings.ReplaceAll(allE2EImages, "\n", " ")},
		{name: "one missing", list: strings.SplitN(allE2EImages, "\n", 2)[1], wantErr: "lacks Agnhost"},
		{name: "empty", list: "", wantErr: "lacks"},
		{name: "no ID", list: allE2EImages + "\nregistry.k8s.io/x:1", wantErr: `"registry.k8s.io/x:1" is not ID=name:tag`},
		{name: "twice", list: allE2EImages + "\nNginx=registry.k8s.io/nginx:1", wantErr: "Nginx given twice"},
		{name: "no tag", list: strings.Replace(allE2EImages, "nginx:1.27.0-2", "nginx", 1), wantErr: "Nginx:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			refs, err := parseE2EImages(tc.list)
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if got := refs["Agnhost"].String(); got != "registry.k8s.io/e2e-test-images/agnhost:2.66.1" {
				t.Errorf("Agnhost = %q", got)
			}
		})
	}
}

// TestSelected: optional images only when asked for, by name; a name that
// is no optional image is an error, not ignored.
// TestSelected: optional images only when named; without stand-ins
// (KIND_PULL_UPSTREAM_IMAGES=1) exactly zonepath's own images, the only
// ones such a cluster loads (kind/up.sh loads localhost/ names only).
func TestSelected(t *testing.T) {
	own := zonepathImages()
	tests := []struct {
		with      string
		noStandIn bool
		wantProv  bool
		wantErr   string
	}{
		{with: ""},
		{with: "csi-provisioner", wantProv: true},
		{with: " csi-provisioner, ", wantProv: true},
		{with: "csi-provisoner", wantErr: "--with csi-provisoner: not an optional image (optional: csi-provisioner)"},
		{with: "zonepath", wantErr: "--with zonepath: not an optional image"},
		{with: "", noStandIn: true},
		{with: "csi-provisioner", noStandIn: true},
		{with: "csi-provisoner", noStandIn: true, wantErr: "--with csi-provisoner: not an optional image"},
	}
	for _, tc := range tests {
		got, err := selected(splitList(tc.with), !tc.noStandIn)
		if wanterr.Check(t, err, tc.wantErr) {
			continue
		}
		names := make([]string, 0, len(got))
		for _, s := range got {
			names = append(names, s.name)
			if tc.noStandIn && !strings.HasPrefix(s.repository, zonepathRepository) {
				t.Errorf("--with %q without stand-ins selects %s (%s), which kind/up.sh would not load", tc.with, s.name, s.repository)
			}
		}
		if tc.noStandIn {
			if !slices.Equal(slices.Sorted(slices.Values(names)), own) {
				t.Errorf("--with %q without stand-ins selects %v, want zonepath's own %v", tc.with, names, own)
			}
			continue
		}
		if slices.Contains(names, "csi-provisioner") != tc.wantProv || !slices.Contains(names, agnhostName) {
			t.Errorf("--with %q selects %v", tc.with, names)
		}
	}
}

// TestSpecsConsistent: a stand-in of an e2e image takes its name from the
// framework only; every other image has a repository.
func TestSpecsConsistent(t *testing.T) {
	for _, s := range specs() {
		if (s.e2e == "") == (s.repository == "") {
			t.Errorf("%s: e2e %q, repository %q: exactly one must be set", s.name, s.e2e, s.repository)
		}
		if s.e2e != "" && !s.upstream {
			t.Errorf("%s: a stand-in for the e2e framework's %s must be marked upstream", s.name, s.e2e)
		}
	}
}

// TestCheckAgnhostVersion: a binary stamped with another version than
// the tag the framework asks for is refused.
func TestCheckAgnhostVersion(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "agnhost")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\necho app version 2.66.1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ tag, wantErr string }{
		{tag: "2.66.1"},
		{tag: "2.66.10", wantErr: `says "app version 2.66.1", but the e2e framework asks for agnhost:2.66.10`},
		{tag: "2.66", wantErr: "asks for agnhost:2.66:"},
	}
	for _, tc := range tests {
		wanterr.Check(t, checkAgnhostVersion(binary, tc.tag), tc.wantErr)
	}
}
