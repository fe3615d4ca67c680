package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debPackage is one Debian package unpacked for an image layer.
type debPackage struct {
	name    string // e.g. libc6
	version string // from the .deb's control file
	root    string // the directory dpkg-deb -x unpacked it into
}

// debs fetches Debian packages with apt and unpacks them, caching both
// under dir so that a warm run touches neither apt nor dpkg-deb.
type debs struct {
	dir  string
	logf func(format string, args ...any)
	// aptLists is where apt keeps its package lists; a variable for tests.
	aptLists string
}

// get returns pkg unpacked, downloading and unpacking it when not cached;
// pkg may name alternatives (see resolve).
func (d debs) get(pkg string) (debPackage, error) {
	pkg, err := d.resolve(pkg)
	if err != nil {
		return debPackage{}, err
	}
	deb, err := d.download(pkg)
	if err != nil {
		return debPackage{}, err
	}
	version, err := output("dpkg-deb", "-f", deb, "Version")
	if err != nil {
		return debPackage{}, fmt.Errorf("reading the version of %s: %w", deb, err)
	}
	root, err := d.unpack(deb)
	if err != nil {
		return debPackage{}, err
	}
	return debPackage{name: pkg, version: version, root: root}, nil
}

// download returns the cached .deb of pkg, or fetches it with
// `apt-get download` (the host's architecture and configured suite).
func (d debs) download(pkg string) (string, error) {
	if deb, err := d.cached(pkg); deb != "" || err != nil {
		return deb, err
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return "", err
	}
	if err := d.ensureLists(); err != nil {
		return "", err
	}
	d.logf("downloading %s with apt-get download into %s", pkg, d.dir)
	cmd := exec.Command("apt-get", "download", pkg)
	cmd.Dir = d.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w\n%s", pkg, err, out)
	}
	deb, err := d.cached(pkg)
	if err == nil && deb == "" {
		err = fmt.Errorf("apt-get download %s left no %s_*.deb in %s", pkg, pkg, d.dir)
	}
	return deb, err
}

// resolve turns a package with alternatives, "libssl3t64|libssl3", into
// the first one the cache holds, else the first one the host's apt offers.
// Debian's 64-bit time_t transition renamed libraries whose ABI carries
// time_t: Ubuntu 24.04 (GitHub's ubuntu-latest) and Debian 13 ship
// libssl3t64, where libssl3 is only a name it provides, which apt-get
// download cannot fetch; Debian 12 ships libssl3. A warm cache still
// touches no apt.
func (d debs) resolve(pkg string) (string, error) {
	alts := strings.Split(pkg, "|")
	if len(alts) == 1 {
		return pkg, nil
	}
	for _, a := range alts {
		if deb, err := d.cached(a); deb != "" || err != nil {
			return a, err
		}
	}
	if err := d.ensureLists(); err != nil {
		return "", err
	}
	return choose(alts, func(a string) (bool, error) {
		policy, err := output("apt-cache", "policy", a)
		return candidate(policy) != "", err
	})
}

// choose returns the first of alts that offered says apt can fetch.
func choose(alts []string, offered func(string) (bool, error)) (string, error) {
	for _, a := range alts {
		ok, err := offered(a)
		if err != nil {
			return "", err
		}
		if ok {
			return a, nil
		}
	}
	return "", fmt.Errorf("apt offers none of %s (apt-cache policy shows no candidate)", strings.Join(alts, ", "))
}

// candidate is the version apt-get would fetch, from apt-cache policy's
// output: "" for a package apt does not know (no output) and for a
// virtual one ("Candidate: (none)").
func candidate(policy string) string {
	for _, line := range strings.Split(policy, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Candidate:"); ok {
			if v = strings.TrimSpace(v); v != "(none)" {
				return v
			}
			return ""
		}
	}
	return ""
}

// cached finds pkg's .deb in the cache; more than one is an error rather
// than a guess at which version the images should carry.
func (d debs) cached(pkg string) (string, error) {
	found, err := filepath.Glob(filepath.Join(d.dir, pkg+"_*.deb"))
	if err != nil {
		return "", err
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%d cached packages of %s in %s (%s): remove all but one, or the directory",
		len(found), pkg, d.dir, strings.Join(found, ", "))
}

// ensureLists runs apt-get update only when apt has no package lists yet
// (a fresh container image); otherwise the machine's lists are used as they are.
func (d debs) ensureLists() error {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("apt-get not found: make images takes libc6 and busybox-static from Debian's apt: %w", err)
	}
	lists, err := filepath.Glob(filepath.Join(d.aptLists, "*_Packages*"))
	if err != nil || len(lists) > 0 {
		return err
	}
	d.logf("no apt package lists in %s: running apt-get update", d.aptLists)
	if out, err := exec.Command("apt-get", "update").CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %w\n%s", err, out)
	}
	return nil
}

// unpack extracts deb into <deb without .deb>.d beside it, once: an
// interrupted extraction never leaves a half-filled directory behind that
// a later run would take as complete.
func (d debs) unpack(deb string) (string, error) {
	root := strings.TrimSuffix(deb, ".deb") + ".d"
	if _, err := os.Stat(root); err == nil {
		return root, nil
	}
	tmp, err := os.MkdirTemp(d.dir, ".unpack-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.Command("dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("dpkg-deb -x %s: %w\n%s", deb, err, out)
	}
	if err := os.Rename(tmp, root); err != nil {
		return "", err
	}
	return root, nil
}

// output runs a command and returns its trimmed standard output.
func output(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
