#!/usr/bin/env bash
# Creates the kind cluster $KIND_CLUSTER_NAME (default zonepath) from
# $KIND_CONFIG (default kind/cluster.yaml), kubeconfig in
# _output/kind/kubeconfig. Node image: $KIND_NODE_IMAGE if set (with
# internet: a kindest/node image pinned by digest), else the offline image
# of kind/node-image.sh, built when missing. Host workarounds are added
# to a generated copy of the config only when kind/lib.sh detects the
# quirk, each logged with its reason. Then the images listed in
# _output/images/images.txt are loaded (with KIND_PULL_UPSTREAM_IMAGES=1,
# only zonepath's own, localhost/zonepath/*: the stand-ins built under
# upstream names are left out, so that kubelet pulls the real ones) and all
# nodes must become Ready.
#
# Usage: kind/up.sh   (environment: KIND_CLUSTER_NAME, KIND_CONFIG, KIND_NODE_IMAGE, KIND_WAIT, KIND_PULL_UPSTREAM_IMAGES)
set -euo pipefail
# shellcheck source=kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTER=${KIND_CLUSTER_NAME:-zonepath}
CONFIG=${KIND_CONFIG:-$KIND_ROOT/kind/cluster.yaml}
WAIT=${KIND_WAIT:-300s}
KUBECONFIG_OUT=$KIND_OUT/kubeconfig
KIND=$BIN/kind
KUBECTL=$BIN/kubectl
kubectl() { "$KUBECTL" --kubeconfig "$KUBECONFIG_OUT" "$@"; }

node_image() {
	local image
	if [[ -n ${KIND_NODE_IMAGE:-} ]]; then
		log "node image: $KIND_NODE_IMAGE (KIND_NODE_IMAGE)" >&2
		echo "$KIND_NODE_IMAGE"
		return
	fi
	image=$KIND_NODE_REPO:$(k8s_version)
	if docker image inspect "$image" >/dev/null 2>&1; then
		log "node image: $image (present; make kind-node-image rebuilds it when its inputs change)" >&2
	else
		log "node image: $image is missing: building it (kind/node-image.sh)" >&2
		"$KIND_ROOT/kind/node-image.sh" >&2
	fi
	echo "$image"
}

# workaround_flags IMAGE: kindconfig flags for the quirks this host has.
workaround_flags() {
	local image=$1 flags=()
	if needs_cap_workaround; then
		log "workaround: no CAP_SYS_RESOURCE in the capability bounding set: nodes' containerd runs runc through $RUNC_WRAPPER" >&2
		mkdir -p "$(dirname "$RUNC_WRAPPER")"
		install -m 0755 "$KIND_ROOT/kind/runc-drop-missing-caps" "$RUNC_WRAPPER"
		flags+=(--runc-wrapper "$RUNC_WRAPPER")
	fi
	if needs_oom_workaround; then
		log "workaround: oom_score_adj cannot be lowered here: containerd restrict_oom_score_adj = true" >&2
		flags+=(--restrict-oom-score-adj)
	fi
	if needs_cgroupv1_workaround; then
		log "workaround: the host runs cgroup v1: kubelet failCgroupV1: false" >&2
		flags+=(--allow-cgroup-v1)
	fi
	if needs_simple_cni "$image"; then
		log "workaround: $image has no default CNI (no kindnetd): disableDefaultCNI, ptp/host-local CNI and routes between nodes" >&2
		flags+=(--simple-cni)
	fi
	echo "${flags[@]}"
}

# setup_simple_cni: a ptp/host-local CNI config on every node for its
# podCIDR, and on every node a route to each other node's podCIDR through
# that node's address on the kind network.
setup_simple_cni() {
	local nodes=() n m cidr
	declare -A cidrs ips
	mapfile -t nodes < <("$KIND" get nodes --name "$CLUSTER")
	for n in "${nodes[@]}"; do
		cidr=$(kubectl get node "$n" -o jsonpath='{.spec.podCIDR}')
		[[ -n $cidr ]] || die "node $n has no spec.podCIDR (kube-controller-manager --allocate-node-cidrs)"
		cidrs[$n]=$cidr
		ips[$n]=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$n")
	done
	for n in "${nodes[@]}"; do
		docker exec -i "$n" sh -c 'mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-zonepath-ptp.conflist' <<-EOF
			{
			  "cniVersion": "1.0.0",
			  "name": "zonepath-ptp",
			  "plugins": [
			    {"type": "ptp", "ipMasq": true, "mtu": 1500,
			     "ipam": {"type": "host-local", "ranges": [[{"subnet": "${cidrs[$n]}"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
			    {"type": "portmap", "capabilities": {"portMappings": true}}
			  ]
			}
		EOF
		for m in "${nodes[@]}"; do
			[[ $m == "$n" ]] || docker exec "$n" ip route replace "${cidrs[$m]}" via "${ips[$m]}"
		done
		log "  $n: pods ${cidrs[$n]}, node ${ips[$n]}"
	done
}

load_images() {
	local list=$OUT/images/images.txt ref file n=0
	if [[ ! -s $list ]]; then
		log "no $list: no zonepath images to load (make images writes it)"
		return
	fi
	while read -r ref file; do
		[[ -n $ref && $ref != \#* ]] || continue
		if [[ ${KIND_PULL_UPSTREAM_IMAGES:-} == 1 && $ref != localhost/* ]]; then
			log "  not loading the stand-in $ref: KIND_PULL_UPSTREAM_IMAGES=1, kubelet pulls upstream's"
			continue
		fi
		[[ $file = /* ]] || file=$KIND_ROOT/$file
		[[ -s $file ]] || die "$list names $file for $ref, which is missing or empty"
		if on_every_node "$ref" "$(archive_id "$file")"; then
			log "  $ref: on every node already"
			continue
		fi
		"$KIND" load image-archive "$file" --name "$CLUSTER" >/dev/null
		log "  loaded $ref"
		n=$((n + 1))
	done <"$list"
	log "loaded $n images from $list"
}

# archive_id FILE: the image ID (its config's digest) of a docker-archive
# tarball, as make images writes them.
archive_id() {
	tar -xOf "$1" manifest.json | sed -n 's/.*"Config":"\(sha256:[0-9a-f]*\)".*/\1/p'
}

# on_every_node REF ID: whether REF names image ID on every node (the
# config digest in the manifest containerd keeps for REF), so that loading
# it again, seconds per image on every run against a running cluster,
# would change nothing. A tag whose content changed (a -dirty build) has
# another ID and is loaded.
on_every_node() {
	local ref=$1 id=$2 node
	[[ -n $id ]] || return 1
	for node in $("$KIND" get nodes --name "$CLUSTER"); do
		# shellcheck disable=SC2016 # expanded by the node's shell
		docker exec "$node" sh -c 'm=$(ctr -n k8s.io images ls "name==$1" | awk "NR == 2 { print \$3 }") &&
			[ -n "$m" ] && ctr -n k8s.io content get "$m"' _ "$ref" 2>/dev/null |
			grep "\"config\":{[^}]*\"digest\":\"$id\"" >/dev/null || return 1
	done
}

# fresh_data_dir: the driver keeps its state databases and volume data on
# the host ($KIND_OUT/data, every node's /var/lib/zonepath), so they outlive
# the cluster. A new cluster starts without a deleted one's: its snapshots
# would still hold zones' quota, and its volumes capacity, with no API
# object left to delete them.
fresh_data_dir() {
	if [[ -d $KIND_OUT/data && -n $(ls -A "$KIND_OUT/data") ]]; then
		log "removing $KIND_OUT/data: the driver state of a deleted cluster"
		rm -rf "$KIND_OUT/data"
	fi
	mkdir -p "$KIND_OUT/data"
}

create() {
	local image=$1 flags gen=$KIND_OUT/cluster.yaml
	[[ -f $CONFIG ]] || die "KIND_CONFIG $CONFIG: no such file"
	read -r -a flags <<<"$(workaround_flags "$image")"
	(cd "$KIND_ROOT" && "$GO" run ./kind/cmd/kindconfig --in "$CONFIG" --out "$gen" --base "$KIND_ROOT" "${flags[@]}")
	fresh_data_dir
	log "cluster config: $gen (from $CONFIG)"
	"$KIND" create cluster --name "$CLUSTER" --config "$gen" --image "$image" --kubeconfig "$KUBECONFIG_OUT"
	[[ " ${flags[*]} " != *" --simple-cni "* ]] || step "simple CNI" setup_simple_cni
}

main() {
	local t0 image
	[[ $# -eq 0 ]] || die "usage: kind/up.sh (configured by environment, see the header); got: $*"
	[[ -x $KIND && -x $KUBECTL ]] || die "need $KIND and $KUBECTL (make kind-up builds them)"
	t0=$(now)
	"$KIND_ROOT/kind/docker.sh"
	mkdir -p "$KIND_OUT"
	image=$(node_image)
	if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
		log "cluster $CLUSTER exists: reusing it (make kind-down deletes it)"
		"$KIND" get kubeconfig --name "$CLUSTER" >"$KUBECONFIG_OUT"
	else
		step "creating kind cluster $CLUSTER" create "$image"
	fi
	step "loading zonepath images" load_images
	step "waiting for all nodes to be Ready" kubectl wait --for=condition=Ready node --all --timeout="$WAIT"
	kubectl get nodes -L topology.kubernetes.io/region -L topology.kubernetes.io/zone
	log "cluster $CLUSTER up in $(since "$t0")s; export KUBECONFIG=$KUBECONFIG_OUT"
}

main "$@"
