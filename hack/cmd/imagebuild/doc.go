// Command imagebuild builds zonepath's container images without a Docker
// daemon (make images): the binaries make build and make components left in
// bin/, on a base of Debian bookworm's libc6, with busybox-static's mount
// for the node plugin; plus offline stand-ins for the upstream images the
// manifests name and for the e2e framework's images Kubernetes' storage
// suites pull (agnhost from its Go package, nginx and the rest from Debian's
// packages), tagged with the names the pinned framework gives them. Each image becomes a docker-archive tarball (docker load,
// kind load image-archive) listed in images.txt. See README.md.
//
// It must not need a Docker daemon or the network beyond the Debian mirror
// apt already uses, and the images it builds must match the Dockerfile's
// targets (TestDockerfileTargets).
package main
