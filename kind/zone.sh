#!/usr/bin/env bash
# zone.sh down|up ZONE: takes a zone of the kind cluster of kind/cluster.yaml
# down and brings it back, as zonepath-cluster zone does on fake zones, for
# e2e scenario 20 (the zoneOutage commands of e2e/testdata/kind/zonepath-ext.yaml):
#   - the driver: an outage rule (driver/faults/README.md) in the ConfigMap
#     zonepath-fault-rules, which the controller reads as its fault file
#     (deploy/components/zone-outage); the controller pod is annotated so
#     that kubelet refreshes the file at once instead of at its next sync,
#     and the script waits for the controller's "Reloaded fault rules";
#   - the nodes: kubelet stopped on every node of the zone, until the node
#     lifecycle controller marks them Ready=Unknown (and taints them), the way
#     a zone that lost its network looks to Kubernetes.
# up reverses both. Either is idempotent. Needs KUBECONFIG and docker.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
kubectl() { "$BIN/kubectl" "$@"; }

action=${1:-}
zone=${2:-}
[[ $action == down || $action == up ]] && [[ -n $zone ]] || die "usage: $0 down|up ZONE"
ns=zonepath-system
zoneKey=topology.kubernetes.io/zone
mapfile -t nodes < <(kubectl get nodes -l "$zoneKey=$zone" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}')
[[ ${#nodes[@]} -gt 0 ]] || die "no node has $zoneKey=$zone (zones: $(kubectl get nodes -o jsonpath="{.items[*].metadata.labels.topology\.kubernetes\.io/zone}"))"

controller=$(kubectl -n "$ns" get pod -l app.kubernetes.io/name=zonepath-controller -o jsonpath='{.items[0].metadata.name}')
controllerNode=$(kubectl -n "$ns" get pod "$controller" -o jsonpath='{.spec.nodeName}')
if [[ $(kubectl get node "$controllerNode" -o jsonpath="{.metadata.labels.topology\.kubernetes\.io/zone}") == "$zone" ]]; then
	die "the zonepath controller runs on $controllerNode, in $zone: it would never see the rule that brings the zone back (deploy/overlays/kind keeps it out of zone-a)"
fi

# rules FILE-CONTENT: writes the controller's fault file, unless it already
# holds that, and waits until the controller has re-read it.
rules() {
	local since
	if [[ $(kubectl -n "$ns" get configmap zonepath-fault-rules -o jsonpath='{.data.rules\.yaml}') == "$1" ]]; then
		log "the controller's fault file already says so"
		return 0
	fi
	since=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	sleep 1 # the log's --since-time has a resolution of a second
	kubectl -n "$ns" create configmap zonepath-fault-rules --from-literal=rules.yaml="$1" --dry-run=client -o yaml |
		kubectl apply -f - >/dev/null
	kubectl -n "$ns" annotate pod "$controller" --overwrite "zonepath.csi.dev/fault-rules-written=$since" >/dev/null
	for _ in $(seq 120); do
		if kubectl -n "$ns" logs "$controller" -c zonepath --since-time="$since" | grep -q "Reloaded fault rules"; then
			return 0
		fi
		sleep 1
	done
	die "the zonepath controller ($controller) did not re-read its fault rules within 2 minutes"
}

case $action in
down)
	step "zone $zone: outage rule for the driver" rules "rules:
- name: zone-outage-$zone
  match:
    segment:
      $zoneKey: $zone
  action:
    outage: true"
	for n in "${nodes[@]}"; do docker exec "$n" systemctl stop kubelet; done
	step "zone $zone: nodes ${nodes[*]} NotReady (kubelet stopped)" \
		kubectl wait --for=condition=Ready=Unknown --timeout=3m "${nodes[@]/#/node/}"
	;;
up)
	for n in "${nodes[@]}"; do docker exec "$n" systemctl start kubelet; done
	step "zone $zone: nodes ${nodes[*]} Ready" kubectl wait --for=condition=Ready --timeout=3m "${nodes[@]/#/node/}"
	step "zone $zone: no outage rule" rules "rules: []"
	;;
esac
