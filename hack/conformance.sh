#!/usr/bin/env bash
# make conformance, the main job: conformance of the built-in driver, on
# its own and in a local multi-zone cluster, with results under
# _output/conformance/:
#   1. hack/sanity.sh: upstream csi-sanity and zonepath-sanity against
#      bin/zonepath on a socket (sanity/);
#   2. the fake-zones cluster tests (go test -tags fakezones ./fakezones/...):
#      6-node and 300-node clusters up and down, a zonal PVC provisioned in
#      its zone by the real provisioner, a VolumeSnapshot ReadyToUse through
#      the real snapshot-controller, no process left after down; and the
#      KEP-5943 controllers end to end (controllers/integration), with the
#      VolumeSnapshotTopology gate on and off;
#   3. a fake-zones cluster from hack/conformance/cluster.yaml, and
#      zonepath-sanity against the driver as Kubernetes runs it there
#      (controller socket plus node-a-1's node plugin);
#   4. a second fake-zones cluster from hack/conformance/e2e-cluster.yaml
#      (two regions), and the e2e suite bin/zonepath-e2e against it with the
#      example driver files of e2e/testdata, JUnit in e2e/junit.xml; then
#      again for the cluster's second driver without snapshot topology
#      (label capability-off), JUnit in e2e/junit-nocap.xml;
#   5. down, always, for both clusters, also after a failure or Ctrl-C.
# Exits non-zero when any step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/_output/conformance"
cluster="$out/cluster"
e2ecluster="$out/e2e-cluster"
rm -rf "$out"
mkdir -p "$out"

down() {
  local dir
  for dir in "$cluster" "$e2ecluster"; do
    [ -d "$dir" ] || continue
    bin/zonepath-cluster down --work-dir "$dir" >>"$out/down.log" 2>&1 || echo "conformance: down of $dir failed, see $out/down.log"
  done
}
trap down EXIT

echo "conformance: [1/4] sanity of bin/zonepath on its own"
SANITY_OUT="$out/sanity" hack/sanity.sh

echo "conformance: [2/4] fake-zones cluster tests and the KEP-5943 controllers end to end"
ZONEPATH_BIN="$PWD/bin" go test -tags fakezones -count=1 -v ./fakezones/... ./controllers/integration/... 2>&1 | tee "$out/fakezones-test.txt"

echo "conformance: [3/4] zonepath-sanity against the driver in a fake-zones cluster"
bin/zonepath-cluster up --work-dir "$cluster" --config hack/conformance/cluster.yaml
mkdir -p "$cluster/sanity"
bin/zonepath-sanity \
  --csi.endpoint "unix://$cluster/csi/nodes/node-a-1.sock" \
  --csi.controllerendpoint "unix://$cluster/csi/controller.sock" \
  --csi.mountdir "$cluster/sanity/mnt" --csi.stagingdir "$cluster/sanity/staging" \
  --csi.testnodevolumeattachlimit --zonepath.config hack/conformance/sanity.yaml \
  --ginkgo.junit-report "$out/cluster-sanity.xml" --ginkgo.no-color | tee "$out/cluster-sanity.txt"
bin/zonepath-cluster down --work-dir "$cluster" >>"$out/down.log" 2>&1

echo "conformance: [4/4] the e2e suite (bin/zonepath-e2e) against a two-region fake-zones cluster"
bin/zonepath-cluster up --work-dir "$e2ecluster" --config hack/conformance/e2e-cluster.yaml
mkdir -p "$out/e2e"
start=$(date +%s)
bin/zonepath-e2e \
  --kubeconfig "$e2ecluster/kubeconfig/admin" \
  --storage.testdriver e2e/testdata/zonepath.yaml \
  --zonepath.driver-ext e2e/testdata/zonepath-ext.yaml \
  --ginkgo.junit-report "$out/e2e/junit.xml" --ginkgo.no-color \
  --e2e-output-dir "$out/e2e" 2>&1 | tee "$out/e2e/e2e.txt"
echo "conformance: e2e suite took $(( $(date +%s) - start ))s"
# The same cluster's second driver, nocap.zonepath.csi.dev, lacks
# SNAPSHOT_ACCESSIBILITY_CONSTRAINTS: the specs for such a driver.
start=$(date +%s)
bin/zonepath-e2e \
  --kubeconfig "$e2ecluster/kubeconfig/admin" \
  --storage.testdriver e2e/testdata/zonepath-nocap.yaml \
  --zonepath.driver-ext e2e/testdata/zonepath-nocap-ext.yaml \
  --ginkgo.label-filter capability-off \
  --ginkgo.junit-report "$out/e2e/junit-nocap.xml" --ginkgo.no-color \
  --e2e-output-dir "$out/e2e" 2>&1 | tee "$out/e2e/e2e-nocap.txt"
echo "conformance: e2e suite for the driver without snapshot topology took $(( $(date +%s) - start ))s"
echo "conformance: passed; logs and JUnit under $out"
