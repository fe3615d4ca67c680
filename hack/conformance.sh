#!/usr/bin/env bash
# make conformance, the main job: conformance of the built-in driver, on
# its own and in a local multi-zone cluster, with results under
# _output/conformance/. Two lanes run side by side, since the suites mostly
# wait (for the scheduler, for a pod that must stay Pending) and the e2e run
# alone is most of the time; each line of a lane's output is prefixed with
# its name (and kept in lane-NAME.log, whose end is printed again when the
# lane fails), and every step says how long it took:
#   lane e2e:
#   4. a fake-zones cluster from hack/conformance/e2e-cluster.yaml
#      (two regions, the VolumeSnapshotTopology gate on, zones of different
#      capacity for the storage-capacity specs), and the e2e suite
#      bin/zonepath-e2e against it with the example driver files of
#      e2e/testdata, every spec but those of the other runs; JUnit in
#      e2e/junit-zonepath.xml; then on the same cluster for its second
#      driver, without snapshot topology (label capability-off), JUnit in
#      e2e/junit-nocap.xml; then hack/deploy-check.sh: a server-side dry-run
#      of every kustomization under deploy/ against that cluster (fatal);
#   lane rest, one step after another:
#   e2e-unit: go vet ./e2e and the e2e package's unit tests, run from
#      bin/zonepath-e2e (make test leaves that package out);
#   1. hack/sanity.sh: upstream csi-sanity and zonepath-sanity against
#      bin/zonepath on a socket (sanity/);
#   2. the fake-zones cluster tests (go test -tags livecluster ./fakezones/...):
#      6-node and 300-node clusters up and down, a zonal PVC provisioned in
#      its zone by the real provisioner, a VolumeSnapshot ReadyToUse through
#      the real snapshot-controller, an extra driver, no process left after
#      down (the KEP-5943 controllers end to end are the e2e suite's, below);
#   3. a fake-zones cluster from hack/conformance/cluster.yaml, and
#      zonepath-sanity against the driver as Kubernetes runs it there
#      (controller socket plus node-a-1's node plugin);
#   5. a third fake-zones cluster from hack/conformance/e2e-cluster-2.yaml
#      whose controllers run with --feature-gates=VolumeSnapshotTopology=false
#      and whose nodes include KEP-5030's cases, and the feature-gate-off and
#      attach-limits specs against it (e2e/testdata/zonepath-cluster-2-ext.yaml);
#      JUnit in e2e/junit-cluster-2.xml;
#   then, once both lanes are done:
#   6. the runs' JUnit files merged (e2e/cmd/junitmerge) into e2e/junit.xml,
#      every spec once, where it ran, and a one-line summary: specs passed,
#      failed and skipped, wall time per run. It fails when a spec failed,
#      was skipped in every run, or ran in two; and the three clusters' API
#      audit logs against deploy/rbac/api-usage.yaml;
#   down, always, for every cluster, also after a failure or Ctrl-C.
# The driver personalities (make conformance-matrix) prove the suites right
# on other drivers' shapes, not this driver's conformance: .ci/run runs them.
# An e2e run that fails does not stop the next one, so that junit.xml lists
# every spec; the script fails at the end then.
# Exits non-zero when any step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$PWD/_output/conformance"
cluster="$out/cluster"
e2ecluster="$out/e2e-cluster"
gateoffcluster="$out/e2e-cluster-gate-off"
rm -rf "$out"
mkdir -p "$out"

down() {
  local dir
  for dir in "$cluster" "$e2ecluster" "$gateoffcluster"; do
    [ -d "$dir" ] || continue
    bin/zonepath-cluster down --work-dir "$dir" >>"$out/down.log" 2>&1 || echo "conformance: down of $dir failed, see $out/down.log"
  done
}

now() { date +%s; }

# step NAME: prints the step's name and remembers when it began; done_step
# prints how long it took.
step() { step_name=$1; step_start=$(now); echo "conformance: $1"; }
done_step() { echo "conformance: $step_name: done in $(( $(now) - step_start ))s"; }

sanity_alone() {
  step "[1/6] sanity of bin/zonepath on its own"
  SANITY_OUT="$out/sanity" hack/sanity.sh
  done_step
}

# make test leaves the e2e suite's own package out (Makefile, UNIT_PKGS):
# its vet and unit tests run here, from the suite binary make build made,
# in the package's directory as go test runs them; TestE2E is the suite.
e2e_unit() {
  step "[e2e-unit] go vet ./e2e, and the e2e package's unit tests from bin/zonepath-e2e"
  go vet ./e2e
  (cd e2e && ../bin/zonepath-e2e -test.skip '^TestE2E$' -test.count=1) | tee "$out/e2e-unit.txt"
  done_step
}

fakezones_tests() {
  step "[2/6] fake-zones cluster tests"
  ZONEPATH_BIN="$PWD/bin" go test -tags livecluster -count=1 -v ./fakezones/... 2>&1 | tee "$out/fakezones-test.txt"
  done_step
}

sanity_in_cluster() {
  step "[3/6] zonepath-sanity against the driver in a fake-zones cluster"
  bin/zonepath-cluster up --work-dir "$cluster" --config hack/conformance/cluster.yaml --rbac deploy/rbac
  mkdir -p "$cluster/sanity"
  bin/zonepath-sanity \
    --csi.endpoint "unix://$cluster/csi/nodes/node-a-1.sock" \
    --csi.controllerendpoint "unix://$cluster/csi/controller.sock" \
    --csi.mountdir "$cluster/sanity/mnt" --csi.stagingdir "$cluster/sanity/staging" \
    --csi.testnodevolumeattachlimit --zonepath.config hack/conformance/sanity.yaml \
    --csi.testvolumemutableparameters sanity/testdata/mutable-parameters.yaml \
    --ginkgo.junit-report "$out/cluster-sanity.xml" --ginkgo.no-color | tee "$out/cluster-sanity.txt"
  bin/zonepath-cluster down --work-dir "$cluster" >>"$out/down.log" 2>&1
  done_step
}

# e2e runs bin/zonepath-e2e once: e2e RUN CLUSTER-DIR DRIVER-FILE EXT-FILE [FLAGS...],
# with JUnit in $out/e2e/junit-RUN.xml and output in $out/e2e/RUN.txt. A
# failing run is recorded in $out/e2e/RUN.failed, not fatal: the merge
# below still lists its specs.
e2e() {
  local run=$1 dir=$2 driver=$3 ext=$4 start
  shift 4
  mkdir -p "$out/e2e/$run"
  start=$(now)
  if ! bin/zonepath-e2e \
    --kubeconfig "$dir/kubeconfig/admin" \
    --storage.testdriver "$driver" \
    --zonepath.driver-ext "$ext" \
    --ginkgo.junit-report "$out/e2e/junit-$run.xml" --ginkgo.no-color \
    --e2e-output-dir "$out/e2e/$run" "$@" 2>&1 | tee "$out/e2e/$run.txt"; then
    touch "$out/e2e/$run.failed"
  fi
  echo "conformance: e2e run $run took $(( $(now) - start ))s"
}
runs=(zonepath nocap cluster-2)

e2e_main() {
  step "[4/6] the e2e suite (bin/zonepath-e2e) against a two-region fake-zones cluster"
  bin/zonepath-cluster up --work-dir "$e2ecluster" --config hack/conformance/e2e-cluster.yaml --rbac deploy/rbac
  e2e zonepath "$e2ecluster" e2e/testdata/zonepath.yaml e2e/testdata/zonepath-ext.yaml \
    --ginkgo.label-filter '!capability-off && !feature-gate-off && !attach-limits && !kubelet'
  e2e nocap "$e2ecluster" e2e/testdata/zonepath-nocap.yaml e2e/testdata/zonepath-nocap-ext.yaml \
    --ginkgo.label-filter capability-off
  echo "conformance: [4/6] kubectl apply --dry-run=server -k of every kustomization under deploy/ against the same cluster"
  hack/deploy-check.sh --kubeconfig "$e2ecluster/kubeconfig/admin" 2>&1 | tee "$out/deploy-check.txt"
  bin/zonepath-cluster down --work-dir "$e2ecluster" >>"$out/down.log" 2>&1
  done_step
}

e2e_gate_off() {
  step "[5/6] the feature-gate-off and attach-limits specs against a cluster whose controllers run with VolumeSnapshotTopology=false"
  bin/zonepath-cluster up --work-dir "$gateoffcluster" --config hack/conformance/e2e-cluster-2.yaml \
    --feature-gates=VolumeSnapshotTopology=false --rbac deploy/rbac
  e2e cluster-2 "$gateoffcluster" e2e/testdata/zonepath.yaml e2e/testdata/zonepath-cluster-2-ext.yaml \
    --ginkgo.label-filter 'feature-gate-off || attach-limits'
  bin/zonepath-cluster down --work-dir "$gateoffcluster" >>"$out/down.log" 2>&1
  done_step
}

rest() { e2e_unit; sanity_alone; fakezones_tests; sanity_in_cluster; e2e_gate_off; }

# lane NAME FUNCTION: runs FUNCTION in the background with errexit, each
# line of its output prefixed "NAME | ", and its exit status in
# $out/lane-NAME.rc. Job control puts each lane in a process group of its
# own, so that stopping it stops everything it started.
set -m
lanes=()
lane() {
  local name=$1 fn=$2
  ( trap 'echo $? >"$out/lane-'"$name"'.rc"' EXIT; "$fn" ) 2>&1 | sed -u "s/^/$name | /" | tee "$out/lane-$name.log" &
  lanes+=("$name")
}

# On exit (also after a failure or Ctrl-C) the lanes stop first, then
# every cluster goes down.
stop_lanes() {
  local pgid
  for pgid in $(jobs -p); do
    kill -TERM -- "-$pgid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
}
trap 'stop_lanes; down' EXIT
trap 'exit 130' INT TERM

start=$(now)
lane e2e e2e_main
lane rest rest
wait
failed_lanes=()
for name in "${lanes[@]}"; do
  rc=$(cat "$out/lane-$name.rc" 2>/dev/null || echo "no exit status")
  [ "$rc" = 0 ] || failed_lanes+=("$name ($rc)")
done
echo "conformance: both lanes done in $(( $(now) - start ))s"

step "[6/6] one JUnit file for all e2e runs, and the clusters' RBAC audit"
merge=0
junits=()
failed_runs=()
for run in "${runs[@]}"; do
  junits+=("$out/e2e/junit-$run.xml")
  [ ! -e "$out/e2e/$run.failed" ] || failed_runs+=("$run")
done
go run ./e2e/cmd/junitmerge -o "$out/e2e/junit.xml" "${junits[@]}" || merge=$?
# The clusters of steps 3-5 ran their components under deploy/rbac's
# ServiceAccounts (up --rbac); their API servers' audit logs must show no
# call denied, none missing from deploy/rbac/api-usage.yaml, and every
# call not marked rare there.
echo "conformance: [rbac] the three clusters' audit logs against deploy/rbac/api-usage.yaml"
rbacaudit=0
go run ./deploy/cmd/rbac-audit --usage deploy/rbac/api-usage.yaml \
  "$cluster/audit/audit.log" "$e2ecluster/audit/audit.log" "$gateoffcluster/audit/audit.log" \
  | tee "$out/rbac-audit.txt" || rbacaudit=$?
done_step
if [ ${#failed_lanes[@]} -gt 0 ]; then
  # The lanes' lines are interleaved above; a failed lane's own last lines
  # come again here, where a reader (or a CI page showing only the end of
  # the log) sees them. A go test step prints a failure above the packages
  # that passed after it, out of reach of that tail: the tests' own lines
  # (t.Log, t.Error), their failures and panics come last.
  for name in "${lanes[@]}"; do
    [ "$(cat "$out/lane-$name.rc" 2>/dev/null)" != 0 ] || continue
    echo "conformance: the last 60 lines of lane $name (whole: $out/lane-$name.log):"
    tail -n 60 "$out/lane-$name.log"
    # A test timeout or a build failure prints FAIL or panic, no --- FAIL.
    if grep -qE -- '--- FAIL|^[^|]*\| (FAIL|panic:)' "$out/lane-$name.log"; then
      echo "conformance: lane $name's go test messages and failures (the last 40):"
      grep -E -- '_test\.go:[0-9]+: |--- FAIL|^[^|]*\| (FAIL|panic:)' "$out/lane-$name.log" | tail -n 40
    fi
  done
  echo "conformance: failed lanes: ${failed_lanes[*]}; the failing step is the last 'conformance:' line of its lane above"
  exit 1
fi
if [ ${#failed_runs[@]} -gt 0 ] || [ "$merge" -ne 0 ]; then
  echo "conformance: e2e failed (runs failed: ${failed_runs[*]:-none}); see $out/e2e/junit.xml and $out/e2e/<run>.txt"
  exit 1
fi
if [ "$rbacaudit" -ne 0 ]; then
  echo "conformance: the RBAC audit failed; see $out/rbac-audit.txt"
  exit 1
fi
echo "conformance: passed in $(( $(now) - start ))s; logs and JUnit under $out"
