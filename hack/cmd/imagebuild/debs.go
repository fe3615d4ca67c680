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

// get returns pkg unpacked, downloading and unpacking it when not cached.
func (d debs) get(pkg string) (debPackage, error) {
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
