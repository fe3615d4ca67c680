#!/usr/bin/env bash
# Builds the offline kind node image $KIND_NODE_REPO:<kubernetes version>
# without a registry: a debootstrap bookworm root filesystem
# (kind/rootfs.sh), kind's node base files from the pinned kind module,
# kubelet/kubeadm/kubectl and the control-plane images built from the pinned
# kubernetes module, all images preloaded into the node's containerd `k8s.io`
# namespace. Nothing is pulled, so kubeadm finds every image it lists.
#
# The image carries a label with a hash of its inputs (root filesystem,
# binaries, kind's base files, these scripts); when an image with the same
# hash exists it is reused and nothing is built. --force rebuilds anyway.
#
# Usage: kind/node-image.sh [--force]
set -euo pipefail
# shellcheck source=kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

INPUTS_LABEL=io.zonepath.kind-node.inputs
# Built by hack/components.sh; `make components` builds the control plane
# too, so for those this is a relink check of a few seconds.
# CoreDNS costs about 4 CPU-minutes cold (hack/components/coredns).
COMPONENTS=(kubeadm kubelet kube-proxy etcd kube-apiserver kube-controller-manager kube-scheduler kubectl coredns)
WORK=$KIND_OUT/node-image
ROOTFS=$WORK/rootfs
IMAGES=$WORK/images

build_binaries() { GO=$GO BIN=$BIN "$KIND_ROOT/hack/components.sh" "${COMPONENTS[@]}"; }

build_pause() {
	local kdir
	kdir=$(cd "$KIND_ROOT" && "$GO" list -m -f '{{.Dir}}' k8s.io/kubernetes)
	mkdir -p "$WORK"
	gcc -Os -Wall -Werror -static "-DVERSION=v$PAUSE_TAG-zonepath" \
		-o "$WORK/pause" "$kdir/build/pause/linux/pause.c"
}

# inputs_hash: what the image is made of; a change in any rebuilds it.
inputs_hash() {
	{
		basename "$ROOTFS_TARBALL"
		(cd "$BIN" && sha256sum "${COMPONENTS[@]}")
		sha256sum "$WORK/pause" | cut -d' ' -f1
		(cd "$KIND_MODULE" && find images/base/files -type f -print0 | sort -z | xargs -0 sha256sum)
		cat "$KIND_ROOT"/kind/{lib.sh,node-image.sh,runc-drop-missing-caps}
	} | sha256sum | cut -c1-16
}

# libs_of SRCROOT FILE: the shared libraries FILE needs, as ldd in SRCROOT
# sees them (none for a static binary).
libs_of() {
	if [[ $1 == / ]]; then ldd "$2"; else chroot "$1" ldd "$2"; fi 2>/dev/null | grep -oE '/[^ ]+' || true
}

# add_binary SRCROOT FILE DEST TARGET: copies SRCROOT/FILE to DEST/TARGET,
# and the shared libraries it needs to the same paths under DEST.
add_binary() {
	local src=${1%/} file=$2 dest=$3 target=$4 lib
	mkdir -p "$dest$(dirname "$target")"
	cp -L "$src$file" "$dest$target"
	# Debug symbols only make the node image bigger.
	strip --strip-debug "$dest$target"
	for lib in $(libs_of "${src:-/}" "$file"); do
		mkdir -p "$dest$(dirname "$lib")"
		cp -L "$src$lib" "$dest$lib"
	done
}

# image_from_dir DIR REF NAME [CHANGE...]: a one-layer image from DIR (docker
# import), saved as a docker archive for containerd to import.
image_from_dir() {
	local dir=$1 ref=$2 name=$3 change=()
	shift 3
	for c in "$@"; do change+=(--change "$c"); done
	mkdir -p "$dir"/{etc,tmp,var/run}
	chmod 1777 "$dir/tmp"
	printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n' >"$dir/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\n' >"$dir/etc/group"
	tar -C "$dir" --numeric-owner -c . | docker import "${change[@]}" - "$ref" >/dev/null
	docker save -o "$IMAGES/$name.tar" "$ref"
	log "  image $ref ($(du -h "$IMAGES/$name.tar" | cut -f1))"
}

# component_image REF: the image kubeadm names REF, from our binaries.
component_image() {
	local ref=$1 name dir
	name=${ref##*/}
	name=${name%%:*}
	dir=$WORK/img/$name
	rm -rf "$dir"
	case $name in
	kube-apiserver | kube-controller-manager | kube-scheduler | etcd)
		add_binary / "$BIN/$name" "$dir" "/usr/local/bin/$name"
		image_from_dir "$dir" "$ref" "$name"
		;;
	kube-proxy)
		# nftables mode (kind's kubeProxyMode) needs only the nft command.
		add_binary "$ROOTFS" /usr/sbin/nft "$dir" /usr/sbin/nft
		add_binary / "$BIN/kube-proxy" "$dir" /usr/local/bin/kube-proxy
		image_from_dir "$dir" "$ref" "$name"
		;;
	pause)
		mkdir -p "$dir"
		cp "$WORK/pause" "$dir/pause"
		image_from_dir "$dir" "$ref" "$name" 'ENTRYPOINT ["/pause"]' 'USER 65535:65535'
		;;
	coredns)
		add_binary / "$BIN/coredns" "$dir" /coredns
		image_from_dir "$dir" "$ref" "$name" 'ENTRYPOINT ["/coredns"]'
		;;
	*) die "kubeadm lists an image this script cannot build: $ref" ;;
	esac
}

build_images() {
	local ref
	rm -rf "$IMAGES" "$WORK/img"
	mkdir -p "$IMAGES"
	while read -r ref; do
		component_image "$ref"
	done < <("$BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null)
	# The pause image the e2e framework names (imageutils.GetPauseImageName);
	# the same as kubeadm's today, tagged again if they ever differ.
	if [[ $E2E_PAUSE != "$KUBEADM_PAUSE" ]]; then
		docker tag "$KUBEADM_PAUSE" "$E2E_PAUSE"
		docker save -o "$IMAGES/pause-e2e.tar" "$E2E_PAUSE"
	fi
}

# kind's node base files (images/base/files in the kind module) with the
# modes its Dockerfile gives them.
install_kind_files() {
	local f=$KIND_MODULE/images/base/files
	install -m 0755 "$f"/usr/local/bin/* "$ROOTFS/usr/local/bin/"
	mkdir -p "$ROOTFS"/kind/bin "$ROOTFS"/etc/systemd/system/kubelet.service.d "$ROOTFS"/etc/kubernetes/manifests
	install -m 0644 "$f"/kind/README.txt "$ROOTFS/kind/"
	install -m 0755 "$f"/kind/bin/* "$ROOTFS/kind/bin/"
	install -m 0644 "$f"/etc/crictl.yaml "$ROOTFS/etc/"
	install -m 0644 "$f"/etc/containerd/config.toml -D -t "$ROOTFS/etc/containerd"
	install -m 0644 "$f"/etc/default/kubelet "$ROOTFS/etc/default/"
	install -m 0644 "$f"/etc/sysctl.d/* "$ROOTFS/etc/sysctl.d/"
	find "$f/etc/systemd/system" -maxdepth 1 -type f -exec install -m 0644 -t "$ROOTFS/etc/systemd/system" {} +
	install -m 0644 "$f"/etc/systemd/system/kubelet.service.d/* "$ROOTFS/etc/systemd/system/kubelet.service.d/"
}

# configure_node: what kind's base Dockerfile does after installing packages,
# with Debian's containerd, runc and CNI plugins standing in for kind's builds.
configure_node() {
	local r=$ROOTFS
	find "$r/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
	rm -f "$r"/lib/systemd/system/multi-user.target.wants/* "$r"/etc/systemd/system/*.wants/* \
		"$r"/lib/systemd/system/local-fs.target.wants/* "$r"/lib/systemd/system/sockets.target.wants/*udev* \
		"$r"/lib/systemd/system/sockets.target.wants/*initctl* "$r"/lib/systemd/system/basic.target.wants/*
	echo "ReadKMsg=no" >>"$r/etc/systemd/journald.conf"
	ln -sf /usr/lib/systemd/systemd "$r/sbin/init"
	for b in containerd containerd-shim-runc-v2 ctr; do ln -sf "/usr/bin/$b" "$r/usr/local/bin/$b"; done
	ln -sf /usr/sbin/runc "$r/usr/local/sbin/runc"
	install -m 0755 "$KIND_ROOT/kind/runc-drop-missing-caps" "$r/usr/local/sbin/"
	mkdir -p "$r/opt/cni/bin"
	for p in "$r"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/${p##*/}" "$r/opt/cni/bin/"; done
	install -m 0755 "$BIN/kubelet" "$BIN/kubeadm" "$BIN/kubectl" "$r/usr/bin/"
	echo "$K8S_VERSION" >"$r/kind/version"
	sed -i "s|^\(\s*sandbox_image = \).*|\1\"$KUBEADM_PAUSE\"|" "$r/etc/containerd/config.toml"
	ctr oci spec |
		jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
		jq 'del(.process.rlimits)' >"$r/etc/containerd/cri-base.json"
	systemctl --root="$r" enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
	systemctl --root="$r" mask systemd-binfmt.service >/dev/null 2>&1
}

# preload: imports every image archive into the node's containerd content
# store (namespace k8s.io) with a containerd of our own whose root is the
# node's /var/lib/containerd; the node's containerd (the same Debian
# version) unpacks them on first use.
preload() {
	local tmp pid i tar
	tmp=$(mktemp -d /tmp/zonepath-preload.XXXXXX)
	cat >"$tmp/config.toml" <<-EOF
		version = 2
		root = "$ROOTFS/var/lib/containerd"
		state = "$tmp/state"
		disabled_plugins = ["io.containerd.grpc.v1.cri"]
		[grpc]
		  address = "$tmp/containerd.sock"
	EOF
	containerd --config "$tmp/config.toml" >"$WORK/preload-containerd.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 50; i++)); do
		[[ -S $tmp/containerd.sock ]] && break
		sleep 0.2
	done
	for tar in "$IMAGES"/*.tar; do
		ctr -a "$tmp/containerd.sock" -n k8s.io images import --no-unpack --all-platforms "$tar" >/dev/null
	done
	ctr -a "$tmp/containerd.sock" -n k8s.io images ls -q | sed 's/^/  preloaded /'
	kill "$pid"
	wait "$pid" || true
	rm -rf "$tmp"
}

assemble() {
	rm -rf "$ROOTFS"
	mkdir -p "$ROOTFS"
	tar -C "$ROOTFS" -xzf "$ROOTFS_TARBALL"
	install_kind_files
	configure_node
}

import_node() {
	tar -C "$ROOTFS" --numeric-owner -c . | docker import \
		--change 'ENV container=docker' \
		--change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
		--change "LABEL $INPUTS_LABEL=$HASH" \
		- "$NODE_IMAGE" >/dev/null
	# systemd stops cleanly on SIGRTMIN+3; docker import cannot set
	# STOPSIGNAL, a metadata-only build (no layer, nothing pulled) can.
	printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$NODE_IMAGE" |
		DOCKER_BUILDKIT=0 docker build -q -t "$NODE_IMAGE" - >"$WORK/stopsignal-build.log" 2>&1 ||
		die "docker build of the STOPSIGNAL layer failed; see $WORK/stopsignal-build.log"
	rm -rf "$ROOTFS" "$WORK/img"
}

main() {
	local force=false t0
	case ${1:-} in
	--force) force=true ;;
	"") ;;
	*) die "usage: kind/node-image.sh [--force] (unknown argument: $1)" ;;
	esac
	t0=$(now)
	"$KIND_ROOT/kind/docker.sh"
	K8S_VERSION=$(k8s_version)
	KIND_MODULE=$(kind_module_dir)
	NODE_IMAGE=$KIND_NODE_REPO:$K8S_VERSION
	ROOTFS_TARBALL=$("$KIND_ROOT/kind/rootfs.sh")
	step "building kubelet, kubeadm, kube-proxy and the control plane (hack/components.sh)" build_binaries
	KUBEADM_PAUSE=$("$BIN/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null | grep /pause:)
	PAUSE_TAG=${KUBEADM_PAUSE##*:}
	E2E_PAUSE=$(cd "$KIND_ROOT" && "$GO" run ./kind/cmd/e2epause)
	build_pause
	HASH=$(inputs_hash)
	if ! $force && [[ $(docker image inspect -f "{{index .Config.Labels \"$INPUTS_LABEL\"}}" "$NODE_IMAGE" 2>/dev/null) == "$HASH" ]]; then
		log "node image $NODE_IMAGE is up to date (inputs $HASH): skipping the build"
		return
	fi
	# The root filesystem first: the kube-proxy image takes nft from it.
	step "node root filesystem" assemble
	step "control-plane images for kubeadm $K8S_VERSION" build_images
	step "preloading images into the node's containerd (k8s.io)" preload
	step "docker import $NODE_IMAGE" import_node
	log "node image $NODE_IMAGE built in $(since "$t0")s ($(docker image inspect -f '{{.Size}}' "$NODE_IMAGE" | awk '{ printf "%.0f MB", $1 / 1e6 }'), inputs $HASH)"
}

main "$@"
