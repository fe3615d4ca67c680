#!/usr/bin/env bash
# Builds the fake-zones cluster's components into bin/ from the Go modules
# pinned in this repository, with their versions stamped the way their own
# release builds stamp them:
#   etcd                                  hack/components/etcd/go.mod (see there why)
#   kube-apiserver, kube-controller-manager,
#   kube-scheduler, kubectl, kwok, snapshot-controller,
#   csi-snapshotter, csi-attacher         go.mod, pinned by hack/tools.go
#   csi-provisioner                       hack/components/csi-provisioner/go.mod (see there why)
#   kubelet, kubeadm, kube-proxy          go.mod, pinned by hack/tools.go; for the offline
#                                         kind node image only (kind/node-image.sh)
#   coredns                               hack/components/coredns/go.mod (see there why); for the
#                                         offline kind node image only
#   agnhost                               go.mod, pinned by hack/tools.go; the e2e framework's test
#                                         image binary, for make images' offline stand-in only
# Versions are read from the module graph, so bumping a pin in go.mod is the
# only change needed.
#
# One build at a time: on two cores parallel Kubernetes builds only thrash.
# Nothing here is cached by hand: go build reuses its build cache for the
# packages and skips the link when bin/<name> already matches, so a rebuild
# with nothing changed takes seconds.
#
# Usage: hack/components.sh [name...]   (default: ALL below, in the order above; the rest on request)
set -euo pipefail

GO=${GO:-go}
# -trimpath and -s -w, as Kubernetes' release builds (make's STRIP; empty with
# make DBG=1, which keeps the DWARF a debugger needs).
STRIP=${STRIP--s -w}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN:-$ROOT/bin}
ETCD_MOD=$ROOT/hack/components/etcd
PROVISIONER_MOD=$ROOT/hack/components/csi-provisioner
COREDNS_MOD=$ROOT/hack/components/coredns

# csi-provisioner is built on request only: the fake-zones cluster runs
# bin/zonepath-provisioner (make build), which carries KEP-5943, and the
# upstream command costs six cold minutes of its own Kubernetes build.
ALL=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok
	snapshot-controller csi-snapshotter csi-attacher)
# kubelet, kubeadm and kube-proxy are built on request only, by the kind node
# image build: the fake-zones cluster has no kubelets.
# agnhost is built on request only, by make images.
KNOWN=("${ALL[@]}" csi-provisioner kubelet kubeadm kube-proxy coredns agnhost)

# modver DIR MODULE: the version of MODULE selected in DIR's module graph.
modver() { (cd "$1" && "$GO" list -m -f '{{.Version}}' "$2"); }

now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# build NAME DIR PACKAGE VERSION LDFLAGS
build() {
	local name=$1 dir=$2 pkg=$3 ver=$4 ldflags=$5 t0
	echo "building $name $ver ..."
	t0=$(now)
	(cd "$dir" && "$GO" build -trimpath -ldflags "$ldflags $STRIP" -o "$BIN/$name" "$pkg")
	echo "built $name $ver in $(since "$t0")s"
}

# Kubernetes binaries: the same -X pairs as kubernetes' hack/lib/version.sh,
# minus buildDate (a changing date would force a relink every time).
k8s_ldflags() {
	local ver=$1 major minor f=""
	major=${ver#v}; major=${major%%.*}
	minor=${ver#v*.}; minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		f+=" -X $pkg.gitVersion=$ver -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
	done
	echo "${f# }"
}

component() {
	local name=$1 ver
	case $name in
	etcd)
		# The version is a variable in etcd's api module; its build script also
		# sets GitSHA, which a module build does not know: say where it came from.
		ver=$(modver "$ETCD_MOD" go.etcd.io/etcd/server/v3)
		build etcd "$ETCD_MOD" go.etcd.io/etcd/server/v3 "$ver" \
			"-X go.etcd.io/etcd/api/v3/version.Version=${ver#v} -X go.etcd.io/etcd/api/v3/version.GitSHA=module-$ver"
		;;
	kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | kubelet | kubeadm | kube-proxy)
		ver=$(modver "$ROOT" k8s.io/kubernetes)
		build "$name" "$ROOT" "k8s.io/kubernetes/cmd/$name" "$ver" "$(k8s_ldflags "$ver")"
		;;
	kwok)
		ver=$(modver "$ROOT" sigs.k8s.io/kwok)
		build kwok "$ROOT" sigs.k8s.io/kwok/cmd/kwok "$ver" \
			"-X sigs.k8s.io/kwok/pkg/consts.Version=$ver"
		;;
	snapshot-controller | csi-snapshotter)
		ver=$(modver "$ROOT" github.com/kubernetes-csi/external-snapshotter/v8)
		build "$name" "$ROOT" "github.com/kubernetes-csi/external-snapshotter/v8/cmd/$name" "$ver" \
			"-X main.version=$ver"
		;;
	csi-attacher)
		ver=$(modver "$ROOT" github.com/kubernetes-csi/external-attacher/v4)
		build csi-attacher "$ROOT" github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher "$ver" \
			"-X main.version=$ver"
		;;
	csi-provisioner)
		ver=$(modver "$PROVISIONER_MOD" github.com/kubernetes-csi/external-provisioner/v6)
		build csi-provisioner "$PROVISIONER_MOD" github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner "$ver" \
			"-X main.version=$ver"
		;;
	coredns)
		# CoreDNS's Makefile stamps its commit the same way.
		ver=$(modver "$COREDNS_MOD" github.com/coredns/coredns)
		build coredns "$COREDNS_MOD" github.com/coredns/coredns "$ver" \
			"-X github.com/coredns/coredns/coremain.GitCommit=module-$ver"
		;;
	agnhost)
		# Stamped the way its Makefile stamps it, with the image version
		# test/images/agnhost/VERSION holds (what --version prints).
		ver=$(cat "$(cd "$ROOT" && "$GO" list -m -f '{{.Dir}}' k8s.io/kubernetes)/test/images/agnhost/VERSION")
		build agnhost "$ROOT" k8s.io/kubernetes/test/images/agnhost "$ver" "-X main.Version=$ver"
		;;
	*)
		echo "components.sh: unknown component $name (known: ${KNOWN[*]})" >&2
		return 2
		;;
	esac
}

mkdir -p "$BIN"
T0=$(now)
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${ALL[@]}")
for n in "${names[@]}"; do
	component "$n"
done
echo "components: ${#names[@]} built into $BIN in $(since "$T0")s"
