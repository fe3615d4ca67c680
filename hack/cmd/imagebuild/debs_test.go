package main

import (
	"os"
	"path/filepath"
	"slices"
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

// policies are apt-cache policy's answers: Debian 12's for a package it
// ships (as this machine printed it), and for a name only provided by
// another package (Ubuntu 24.04's libssl3, provided by libssl3t64).
const (
	policyShipped = `libssl3:
  Installed: 3.0.19-1~deb12u2
  Candidate: 3.0.22-1~deb12u2
  Version table:
     3.0.22-1~deb12u2 500
        500 http://deb.debian.org/debian-security bookworm-security/main amd64 Packages
 *** 3.0.19-1~deb12u2 100
        100 /var/lib/dpkg/status
`
	policyVirtual = `libssl3:
  Installed: (none)
  Candidate: (none)
  Version table:
`
)

func TestCandidate(t *testing.T) {
	tests := []struct{ name, policy, want string }{
		{"shipped", policyShipped, "3.0.22-1~deb12u2"},
		{"virtual", policyVirtual, ""},
		{"unknown to apt", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := candidate(tc.policy); got != tc.want {
				t.Errorf("candidate = %q, want %q", got, tc.want)
			}
		})
	}
}

// hosts are the package names each host's apt offers (has a candidate
// for), among those the images take: Debian 12, where this repository's
// images are built offline, and Ubuntu 24.04, GitHub's ubuntu-latest,
// which names libssl3 libssl3t64 since the 64-bit time_t transition.
var hosts = map[string][]string{
	"debian-12":    {"libc6", "busybox-static", "dash", "coreutils", "libacl1", "libattr1", "libgmp10", "libselinux1", "libpcre2-8-0", "nginx", "nginx-common", "libcrypt1", "libssl3", "zlib1g"},
	"ubuntu-24.04": {"libc6", "busybox-static", "dash", "coreutils", "libacl1", "libattr1", "libgmp10", "libselinux1", "libpcre2-8-0", "nginx", "nginx-common", "libcrypt1", "libssl3t64", "zlib1g"},
}

// TestPackagesOnHosts: every package the images take resolves to one the
// host's apt offers, on each host, and libssl to that host's name for it.
func TestPackagesOnHosts(t *testing.T) {
	wantSSL := map[string]string{"debian-12": "libssl3", "ubuntu-24.04": "libssl3t64"}
	all := append(append([]string{"libc6", "busybox-static"}, glibcPackages...), nginxPackages...)
	for host, names := range hosts {
		t.Run(host, func(t *testing.T) {
			offered := func(p string) (bool, error) { return slices.Contains(names, p), nil }
			for _, pkg := range all {
				got, err := choose(strings.Split(pkg, "|"), offered)
				if err != nil {
					t.Errorf("%s on %s: %v", pkg, host, err)
					continue
				}
				if pkg == libssl && got != wantSSL[host] {
					t.Errorf("libssl on %s: %s, want %s", host, got, wantSSL[host])
				}
			}
		})
	}
}

// TestResolve: the cache decides without apt; otherwise apt-cache
// policy's first candidate; neither alternative offered is an error.
func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		pkg      string // libssl when empty
		cached   []string
		policies map[string]string // apt-cache policy output by package
		want     string
		wantErr  string
		wantApt  bool
	}{
		{name: "single name", pkg: "libc6", want: "libc6"},
		{name: "cached new name", cached: []string{"libssl3t64_3.0.13_amd64.deb"}, want: "libssl3t64"},
		{name: "cached old name", cached: []string{"libssl3_3.0.22_amd64.deb"}, want: "libssl3"},
		{name: "Ubuntu 24.04", policies: map[string]string{"libssl3t64": strings.ReplaceAll(policyShipped, "libssl3:", "libssl3t64:"),
			"libssl3": policyVirtual}, want: "libssl3t64", wantApt: true},
		{name: "Debian 12", policies: map[string]string{"libssl3": policyShipped}, want: "libssl3", wantApt: true},
		{name: "neither", policies: map[string]string{"libssl3": policyVirtual}, wantErr: "apt offers none of libssl3t64, libssl3", wantApt: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fakeApt(t)
			asked := fakeAptCache(t, tc.policies)
			d := debs{dir: t.TempDir(), aptLists: t.TempDir(), logf: t.Logf}
			touch(t, filepath.Join(d.aptLists, "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages.lz4"))
			for _, f := range tc.cached {
				touch(t, filepath.Join(d.dir, f))
			}
			pkg := tc.pkg
			if pkg == "" {
				pkg = libssl
			}
			got, err := d.resolve(pkg)
			if asked() != tc.wantApt {
				t.Errorf("asked apt-cache: %t, want %t", asked(), tc.wantApt)
			}
			if wanterr.Check(t, err, tc.wantErr) {
				return
			}
			if got != tc.want {
				t.Errorf("resolve(%s) = %s, want %s", pkg, got, tc.want)
			}
		})
	}
}

// fakeAptCache puts an apt-cache first in PATH whose policy prints the
// given output for each package (nothing for others, as apt does for an
// unknown name), and reports whether it ran.
func fakeAptCache(t *testing.T, policies map[string]string) (asked func() bool) {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\n: >" + filepath.Join(dir, "asked") + "\n[ \"$1\" = policy ] || exit 100\n"
	for pkg, out := range policies {
		file := filepath.Join(dir, pkg+".policy")
		if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		script += "[ \"$2\" = " + pkg + " ] && cat " + file + "\n"
	}
	script += "exit 0\n"
	if err := os.WriteFile(filepath.Join(dir, "apt-cache"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() bool {
		_, err := os.Stat(filepath.Join(dir, "asked"))
		return err == nil
	}
}
