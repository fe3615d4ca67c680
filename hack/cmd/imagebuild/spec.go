package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// applets says which busybox applets an image carries.
type applets int

const (
	noApplets    applets = iota
	mountApplets         // mount, umount and sh: what k8s.io/mount-utils runs for bind mounts
	allApplets           // every applet: the e2e framework's BusyBox image runs arbitrary shell
)

// spec describes one image that make images builds.
type spec struct {
	// name is the binary in bin/ (for busybox: the Debian package's binary)
	// and the tarball's base name.
	name string
	// repository is the image name without tag. Upstream stand-ins keep
	// upstream's name so the same manifests work with and without internet.
	repository string
	// upstream marks an offline stand-in for an upstream image: it gets the
	// local-build label and the version of the Go module it was built from.
	upstream bool
	// root: the binary runs as root (the node plugin bind-mounts).
	root    bool
	applets applets
	// e2e is the e2e framework's image ID (imageutils.<e2e>) whose name and
	// tag the stand-in takes, given at build time (--e2e-images); repository
	// is then empty.
	e2e string
	// optional images are built only when named in --with: their binary
	// costs minutes of its own build (make images IMAGES_WITH=...).
	optional bool
}

// zonepathRepository is where this repository's own images live; nothing
// pushes there, kind loads the tarballs.
const zonepathRepository = "localhost/zonepath/"

// The stand-ins for the e2e framework's images, by their names in the table.
const (
	busyboxName = "busybox"           // Debian's busybox-static
	agnhostName = "agnhost"           // bin/agnhost (make components COMPONENTS=agnhost)
	nginxName   = "nginx"             // Debian's nginx
	glibcName   = "glibc-dns-testing" // Debian's libc6 and busybox-static
)

// specs lists every image, in build order. The zonepath binaries must each
// have a Dockerfile target of the same name (TestDockerfileTargets).
func specs() []spec {
	return []spec{
		{name: "zonepath", repository: zonepathRepository + "zonepath", root: true, applets: mountApplets},
		{name: "zonepath-provisioner", repository: zonepathRepository + "zonepath-provisioner"},
		{name: "zonepath-snapshotter", repository: zonepathRepository + "zonepath-snapshotter"},
		{name: "zonepath-scheduler", repository: zonepathRepository + "zonepath-scheduler"},
		{name: "zonepath-resizer", repository: zonepathRepository + "zonepath-resizer"},
		{name: "snapshot-controller", repository: "registry.k8s.io/sig-storage/snapshot-controller", upstream: true},
		{name: "csi-attacher", repository: "registry.k8s.io/sig-storage/csi-attacher", upstream: true},
		{name: "csi-provisioner", repository: "registry.k8s.io/sig-storage/csi-provisioner", upstream: true, optional: true},
		// The e2e framework's images the storage suites pull (README.md).
		{name: busyboxName, e2e: "BusyBox", upstream: true, root: true, applets: allApplets},
		{name: agnhostName, e2e: "Agnhost", upstream: true, root: true, applets: allApplets},
		{name: nginxName, e2e: "Nginx", upstream: true, root: true, applets: allApplets},
		{name: glibcName, e2e: "GlibcDnsTesting", upstream: true, root: true, applets: allApplets},
	}
}

// selected are the specs a run builds: all but the optional ones not
// named in with, and without the upstream stand-ins unless standIns (a
// cluster that pulls upstream's images, KIND_PULL_UPSTREAM_IMAGES=1,
// never loads them). A name in with that is no optional image is an
// error either way.
func selected(with []string, standIns bool) ([]spec, error) {
	want := map[string]bool{}
	for _, w := range with {
		want[w] = true
	}
	var out []spec
	for _, s := range specs() {
		if s.optional && !want[s.name] {
			continue
		}
		if s.optional {
			delete(want, s.name)
		}
		if s.upstream && !standIns {
			continue
		}
		out = append(out, s)
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("--with %s: not an optional image (optional: %s)",
			strings.Join(slices.Sorted(maps.Keys(want)), ","), strings.Join(optionalImages(), ","))
	}
	return out, nil
}

func optionalImages() []string {
	var names []string
	for _, s := range specs() {
		if s.optional {
			names = append(names, s.name)
		}
	}
	return names
}

// e2eIDs are the e2e framework's image IDs the stand-ins take names from.
func e2eIDs() []string {
	var ids []string
	for _, s := range specs() {
		if s.e2e != "" {
			ids = append(ids, s.e2e)
		}
	}
	return ids
}

// zonepathImages are the names of this repository's own images.
func zonepathImages() []string {
	var names []string
	for _, s := range specs() {
		if !s.upstream {
			names = append(names, s.name)
		}
	}
	sort.Strings(names)
	return names
}
