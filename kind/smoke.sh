#!/usr/bin/env bash
# Checks a cluster made by kind/up.sh does what zonepath needs of it,
# without any zonepath component:
#   1. every node Ready, each worker labelled with a region and a zone;
#   2. a pause pod pinned to the zone-b worker runs (the preloaded pause image);
#   3. a pod on the zone-a worker reaches the API server through the
#      kubernetes Service (kube-proxy, the CNI and the routes between nodes),
#      as the zonepath controllers will: in-cluster kubectl get --raw /version;
#   4. a pod on the zone-c worker reaches it by name (CoreDNS):
#      https://kubernetes.default.svc.cluster.local.
# The probe image is bin/kubectl with its libraries (docker import), loaded
# with kind; nothing is pulled. Objects go in namespace zonepath-smoke, which
# is deleted at the end.
#
# Usage: kind/smoke.sh   (environment: KIND_CLUSTER_NAME, default zonepath)
set -euo pipefail
# shellcheck source=kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CLUSTER=${KIND_CLUSTER_NAME:-zonepath}
NS=zonepath-smoke
PROBE=localhost/zonepath/kind-smoke:dev
kubectl() { "$BIN/kubectl" --kubeconfig "$KIND_OUT/kubeconfig" "$@"; }

check_nodes() {
	local unlabelled
	kubectl wait --for=condition=Ready node --all --timeout=60s >/dev/null
	unlabelled=$(kubectl get nodes -l '!node-role.kubernetes.io/control-plane' \
		-o jsonpath='{range .items[?(@.metadata.labels.topology\.kubernetes\.io/zone=="")]}{.metadata.name} {end}')
	[[ -z $unlabelled ]] || die "workers without a zone label: $unlabelled"
	kubectl get nodes -L topology.kubernetes.io/region -L topology.kubernetes.io/zone
}

# pod NAME ZONE IMAGE [ARG...]: a pod pinned to ZONE's worker.
pod() {
	local name=$1 zone=$2 image=$3 args=""
	shift 3
	[[ $# -eq 0 ]] || args=$(printf '"%s",' "$@")
	kubectl -n "$NS" apply -f - >/dev/null <<-EOF
		apiVersion: v1
		kind: Pod
		metadata: {name: $name}
		spec:
		  restartPolicy: Never
		  nodeSelector: {topology.kubernetes.io/zone: $zone}
		  containers:
		  - {name: c, image: "$image", imagePullPolicy: Never, args: [${args%,}]}
	EOF
}

check_pause() {
	pod pause zone-b "$("$BIN/kubeadm" config images list --kubernetes-version "$(k8s_version)" 2>/dev/null | grep /pause:)"
	kubectl -n "$NS" wait --for=condition=Ready pod/pause --timeout=60s >/dev/null
	kubectl -n "$NS" get pod pause -o wide
}

probe_image() {
	local dir sum
	sum=$(sha256sum "$BIN/kubectl" | cut -c1-16)
	if [[ $(docker image inspect -f '{{index .Config.Labels "io.zonepath.kubectl"}}' "$PROBE" 2>/dev/null) != "$sum" ]]; then
		dir=$(mktemp -d /tmp/zonepath-smoke.XXXXXX)
		mkdir -p "$dir/usr/local/bin" "$dir/tmp"
		cp "$BIN/kubectl" "$dir/usr/local/bin/"
		for lib in $(ldd "$BIN/kubectl" 2>/dev/null | grep -oE '/[^ ]+' || true); do
			mkdir -p "$dir$(dirname "$lib")"
			cp -L "$lib" "$dir$lib"
		done
		tar -C "$dir" -c . | docker import --change 'ENTRYPOINT ["/usr/local/bin/kubectl"]' \
			--change "LABEL io.zonepath.kubectl=$sum" - "$PROBE" >/dev/null
		rm -rf "$dir"
	fi
	"$BIN/kind" load docker-image "$PROBE" --name "$CLUSTER" >/dev/null
}

check_api_via_service() {
	step "probe image $PROBE (bin/kubectl)" probe_image
	probe api zone-a get --raw /version
}

# probe NAME ZONE KUBECTL-ARGS...: a probe pod that must succeed.
probe() {
	local name=$1 zone=$2
	shift 2
	pod "$name" "$zone" "$PROBE" "$@"
	kubectl -n "$NS" wait --for=jsonpath='{.status.phase}'=Succeeded "pod/$name" --timeout=90s >/dev/null ||
		die "pod $name failed: $(kubectl -n "$NS" logs "$name" 2>&1 | tail -3)"
	log "pod $name on $(kubectl -n "$NS" get pod "$name" -o jsonpath='{.spec.nodeName}'): $(kubectl -n "$NS" logs "$name" | tr -d ' \n' | cut -c1-50)..."
}

# check_dns: with --server, kubectl ignores the in-cluster token and would
# prompt for a user; a username stops the prompt, and the API server, which
# has no basic-auth authenticator, treats the request as anonymous: /version
# is public. The CA still verifies the server.
check_dns() {
	local sa=/var/run/secrets/kubernetes.io/serviceaccount
	probe dns zone-c get --raw /version --server https://kubernetes.default.svc.cluster.local \
		--certificate-authority "$sa/ca.crt" --username anonymous --password none
}

main() {
	[[ $# -eq 0 ]] || die "usage: kind/smoke.sh (no arguments; got: $*)"
	# A namespace left by a failed run holds finished pods: start afresh.
	kubectl delete namespace "$NS" --ignore-not-found --wait=true >/dev/null
	kubectl create namespace "$NS" >/dev/null
	step "nodes Ready with zones" check_nodes
	step "pause pod on the zone-b worker" check_pause
	step "API server through the kubernetes Service from a pod" check_api_via_service
	step "API server by its Service name (CoreDNS)" check_dns
	kubectl delete namespace "$NS" --wait=false >/dev/null
	log "smoke: all checks passed"
}

main "$@"
