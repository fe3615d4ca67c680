package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zonepath/zonepath/internal/wanterr"
)

// fakeApt puts an apt-get first in PATH that logs its arguments and, for
// "download P", leaves P_1.0_amd64.deb in its working directory.
func fakeApt(t *testing.T) (calls func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\n" +
		"if [ \"$1\" = download ]; then : > \"$2_1.0_amd64.deb\"; fi\n"
	if err := os.WriteFile(filepath.Join(dir, "apt-get"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		data, _ := os.ReadFile(log)
		return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(data)), " ", "_"))
	}
}

// TestDownload: apt-get update only without package lists; a cached .deb
// is used without asking apt; two cached versions are an error.
func TestDownload(t *testing.T) {
	tests := []struct {
		name      string
		lists     []string // files in the apt lists directory
		cached    []string // .debs already in the cache
		wantCalls []string
		wantErr   string
	}{
		{name: "fresh machine", wantCalls: []string{"update", "download_libc6"}},
		{name: "lists present", lists: []string{"deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4"},
			wantCalls: []string{"download_libc6"}},
		{name: "cached", cached: []string{"libc6_2.36_amd64.deb"}},
		{name: "two cached", cached: []string{"libc6_2.36_amd64.deb", "libc6_2.37_amd64.deb"}, wantErr: "2 cached packages of libc6"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := fakeApt(t)
			d := debs{dir: t.TempDir(), aptLists: t.TempDir(), logf: t.Logf}
			for _, f := range tc.lists {
				touch(t, filepath.Join(d.aptLists, f))
			}
			for _, f := range tc.cached {
				touch(t, filepath.Join(d.dir, f))
			}
			deb, err := d.download("libc6")
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if !strings.HasPrefix(filepath.Base(deb), "libc6_") {
				t.Fatalf("download = %q", deb)
			}
			if got := calls(); strings.Join(got, " ") != strings.Join(tc.wantCalls, " ") {
				t.Errorf("apt-get calls %q, want %q", got, tc.wantCalls)
			}
		})
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
