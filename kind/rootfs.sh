#!/usr/bin/env bash
# Builds (or reuses) the Debian bookworm root filesystem of the offline kind
# node image with debootstrap, as a tarball under _output/kind/cache named
# after a hash of the suite and package list, so a changed list builds
# a new one and an unchanged one is reused. Prints the tarball's path last.
#
# The packages are what kind's own base image installs that a node here
# needs (systemd, containerd and runc, the CNI plugins, iptables/nftables,
# conntrack, iproute2, ...), taken from Debian rather than built.
#
# Usage: kind/rootfs.sh
set -euo pipefail
# shellcheck source=kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=(systemd dbus containerd runc containernetworking-plugins
	conntrack iptables nftables iproute2 ethtool util-linux mount kmod
	libseccomp2 pigz bash ca-certificates curl jq procps e2fsprogs)

debootstrap_rootfs() {
	local dir=$1 tarball=$2 include
	include=$(
		IFS=,
		echo "${PACKAGES[*]}"
	)
	command -v debootstrap >/dev/null || {
		log "no debootstrap: installing it with apt-get"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
	}
	rm -rf "$dir"
	mkdir -p "$dir"
	debootstrap --variant=minbase --include="$include" "$SUITE" "$dir" "$MIRROR" \
		>"$KIND_OUT/debootstrap.log" 2>&1 ||
		die "debootstrap failed; see $KIND_OUT/debootstrap.log"
	# Package caches and lists are of no use in a node.
	rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
	tar -C "$dir" --numeric-owner -czf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$dir"
}

main() {
	local key tarball
	key=$(printf '%s\n' debootstrap-minbase "$SUITE" "${PACKAGES[@]}" | sha256sum | cut -c1-16)
	tarball=$KIND_OUT/cache/rootfs-$SUITE-$key.tar.gz
	mkdir -p "$KIND_OUT/cache"
	if [[ -s $tarball ]]; then
		log "rootfs: reusing $tarball (package list unchanged)" >&2
	else
		step "rootfs: debootstrap $SUITE with ${#PACKAGES[@]} packages" \
			debootstrap_rootfs "$KIND_OUT/cache/rootfs-$key.d" "$tarball" >&2
	fi
	echo "$tarball"
}

main "$@"
