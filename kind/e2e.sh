#!/usr/bin/env bash
# make kind-e2e: the whole stack installed from deploy/ into the multi-zone
# kind cluster of `make kind-up` (kind/cluster.yaml: real kubelets, real
# mounts), then every spec of the e2e suite, in four runs on that cluster,
# each after (re)deploying the overlay it needs. Results under _output/kind-e2e/:
#   1. main (deploy/overlays/kind: gate on, zonepath-scheduler replacing the
#      stock one): every spec but the capability-off and feature-gate-off
#      ones and the shared-access one, KEP-5030's node cases included: the
#      kind topology's nodeWithoutCSINode worker has its CSINode deleted
#      first;
#   2. nocap (deploy/overlays/kind-nocap: the driver without
#      SNAPSHOT_ACCESSIBILITY_CONSTRAINTS): the capability-off specs;
#   3. gate-off (deploy/overlays/kind-gate-off: VolumeSnapshotTopology=false):
#      the feature-gate-off specs;
#   4. shared (deploy/overlays/kind, the node plugin on zonepath-worker6 too,
#      so that zone-b, the extension file's segments[0], has two nodes with
#      the driver): the shared-access spec (scenario 24), which needs two in
#      the volume's zone, where main keeps zonepath-worker6 without the
#      driver for KEP-5030's node whose CSINode lacks it;
#   then the four JUnit files merged into junit.xml (e2e/cmd/junitmerge): it
#   fails when a spec failed, was skipped in every run (but for the
#   Kubernetes version, as 15c-15g before v1.37), or ran twice.
# Image overrides for upstream components: see kind/stack.sh.
# The cluster stays up for a look (make kind-down removes it), unless
# KIND_E2E_DOWN=1. KIND_E2E_RUNS="main" picks runs.
#
# Usage: VERSION=<image tag> kind/e2e.sh   (make kind-e2e sets it)
set -euo pipefail
cd "$(dirname "$0")/.."

: "${VERSION:?VERSION is the tag make images gave the images}"
CLUSTER=${KIND_CLUSTER_NAME:-zonepath}
KUBECONFIG=${KIND_KUBECONFIG:-$PWD/_output/kind/kubeconfig}
RUNS=${KIND_E2E_RUNS:-main nocap gate-off shared}
out=$PWD/_output/kind-e2e
export KUBECONFIG
# shellcheck source=kind/stack.sh
source kind/stack.sh
stack_begin kind-e2e
# The kind topology and the extension files name the workers as kind does
# for the cluster name zonepath.
[ "$CLUSTER" = zonepath ] || { echo "kind-e2e: KIND_CLUSTER_NAME=$CLUSTER: deploy/overlays/kind/topology.yaml and e2e/testdata/kind name the workers of a cluster named zonepath" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"

# checkNodes: every node of the kind topology exists with its zone labels.
checkNodes() {
  local id zone got
  while read -r id zone; do
    got=$(kubectl get node "$id" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/region}/{.metadata.labels.topology\.kubernetes\.io/zone}') ||
      { echo "kind-e2e: node $id of deploy/overlays/kind/topology.yaml does not exist: make kind-up with kind/cluster.yaml" >&2; return 1; }
    [ "$got" = "$zone" ] || { echo "kind-e2e: node $id is in $got, deploy/overlays/kind/topology.yaml says $zone" >&2; return 1; }
  done < <(awk '/- id:/ { id = $3 } /^  zone:/ { print id, $2 }' deploy/overlays/kind/topology.yaml)
}

# dropCSINode NODE: KEP-5030's node without a CSINode. kubelet writes one at
# its start and again only when a driver registers, which the node plugin
# DaemonSet never does on this node.
dropCSINode() {
  kubectl delete csinode "$1" --ignore-not-found
  step "CSINode of $1 deleted (attachLimits.nodeWithoutCSINode)"
}

junits=()
failed=()
# run NAME OVERLAY EXT LABEL-FILTER: deploy OVERLAY, run the suite.
run() {
  local name=$1 overlay=$2 ext=$3 filter=$4 rc=0 start=$SECONDS
  stack_deploy "$overlay"
  if [ "$name" = main ]; then
    # As kind/cluster.yaml labels them, whatever make kind-upstream left.
    stack_node_plugins false zonepath-worker5 zonepath-worker6 zonepath-worker7
    dropCSINode zonepath-worker7
  fi
  if [ "$name" = shared ]; then
    stack_node_plugins true zonepath-worker6
  fi
  step "run $name: e2e suite ($filter)"
  junits+=("$out/junit-$name.xml")
  bin/zonepath-e2e --kubeconfig "$KUBECONFIG" \
    --storage.testdriver e2e/testdata/kind/zonepath.yaml \
    --zonepath.driver-ext "$ext" \
    --ginkgo.label-filter "$filter" --ginkgo.no-color \
    --ginkgo.junit-report "$out/junit-$name.xml" --ginkgo.timeout 60m 2>&1 | tee "$out/$name.txt" || rc=$?
  stack_logs "$out/logs-$name.txt"
  [ "$rc" = 0 ] || failed+=("$name")
  step "run $name: exit $rc in $((SECONDS - start))s"
}

checkNodes
for r in $RUNS; do
  case $r in
  main) run main deploy/overlays/kind e2e/testdata/kind/zonepath-ext.yaml '!capability-off && !feature-gate-off && !shared-access' ;;
  nocap) run nocap deploy/overlays/kind-nocap e2e/testdata/kind/zonepath-nocap-ext.yaml capability-off ;;
  gate-off) run gate-off deploy/overlays/kind-gate-off e2e/testdata/kind/zonepath-gate-off-ext.yaml feature-gate-off ;;
  shared) run shared deploy/overlays/kind e2e/testdata/kind/zonepath-ext.yaml shared-access ;;
  *) echo "kind-e2e: KIND_E2E_RUNS: unknown run $r (main, nocap, gate-off, shared)" >&2; exit 2 ;;
  esac
done
merge=0
go run ./e2e/cmd/junitmerge -o "$out/junit.xml" "${junits[@]}" || merge=$?
stack_loops >"$out/losetup.txt"
step "done (runs failed: ${failed[*]:-none}); JUnit, logs and losetup -a per node in $out"
if [ "${KIND_E2E_DOWN:-}" = 1 ]; then
  bin/kind delete cluster --name "$CLUSTER"
fi
[ ${#failed[@]} -eq 0 ] && [ "$merge" -eq 0 ]
