# shellcheck shell=bash
# Shared by the kind/ scripts (sourced, not run): paths, progress lines
# with timings, and the host checks that decide which workarounds apply.
# Every workaround is chosen by a check here, never by the machine's name.

KIND_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
GO=${GO:-go}
BIN=${BIN:-$KIND_ROOT/bin}
OUT=${OUT:-$KIND_ROOT/_output}
export KIND_OUT=$OUT/kind
KIND_NODE_REPO=${KIND_NODE_REPO:-localhost/zonepath/kind-node}
# Where the runc wrapper lives on the host: outside the work tree, because
# dockerd keeps running after a work tree is removed.
RUNC_WRAPPER=${RUNC_WRAPPER:-/usr/local/libexec/zonepath/runc-drop-missing-caps}

now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
log() { echo "[$(date +%H:%M:%S)] $*"; }
die() {
	echo "error: $*" >&2
	exit 1
}

# step NAME CMD...: runs CMD with a start line and a done line with its time.
step() {
	local name=$1 t0
	shift
	log "$name ..."
	t0=$(now)
	"$@"
	log "$name: done in $(since "$t0")s"
}

# k8s_version: the Kubernetes version pinned in go.mod (v1.37.1).
k8s_version() { (cd "$KIND_ROOT" && "$GO" list -m -f '{{.Version}}' k8s.io/kubernetes); }

# kind_module_dir: the pinned kind module in the module cache (its node base
# files are used at build time, never copied into this repository).
kind_module_dir() { (cd "$KIND_ROOT" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kind); }

# --- host checks: each prints nothing and returns 0 when the workaround applies.

# needs_cap_workaround: the bounding set lacks CAP_SYS_RESOURCE, which every
# privileged container requests; runc then cannot start them.
needs_cap_workaround() {
	local bnd
	bnd=$(awk '/^CapBnd:/ { print $2 }' /proc/self/status)
	(((0x$bnd >> 24) & 1)) && return 1
	return 0
}

# needs_oom_workaround: this process cannot lower an oom_score_adj, so
# containerd in a node cannot either; its CRI must then not try
# (restrict_oom_score_adj = true).
needs_oom_workaround() {
	! sh -c 'echo -999 >/proc/self/oom_score_adj' 2>/dev/null
}

# needs_cgroupv1_workaround: the host runs cgroup v1, which kubelet 1.35+
# refuses unless failCgroupV1 is false.
needs_cgroupv1_workaround() {
	[[ $(stat -fc %T /sys/fs/cgroup) != cgroup2fs ]]
}

# needs_simple_cni IMAGE: the node image ships no default CNI manifest (the
# offline image has no kindnetd), so kind must not install one.
needs_simple_cni() {
	! docker run --rm --entrypoint /bin/sh "$1" -c 'test -s /kind/manifests/default-cni.yaml' >/dev/null 2>&1
}
