package main

import "sort"

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
}

// zonepathRepository is where this repository's own images live; nothing
// pushes there, kind loads the tarballs.
const zonepathRepository = "localhost/zonepath/"

// busyboxName is the busybox stand-in's name in the table; its repository
// comes from the e2e framework at build time (--busybox-ref).
const busyboxName = "busybox"

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
		{name: busyboxName, upstream: true, root: true, applets: allApplets},
	}
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
