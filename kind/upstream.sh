#!/usr/bin/env bash
# make kind-upstream: Kubernetes' own external-storage suites
# (testsuites.CSISuites of the pinned k8s.io/kubernetes, through
# bin/zonepath-e2e --zonepath.upstream-suites) against zonepath on the kind
# cluster of `make kind-up`, as kubernetes-csi's CI runs them against
# csi-driver-host-path, with the driver file e2e/testdata/kind/upstream.yaml.
# The stack is (re)deployed from deploy/overlays/kind first, with the node
# plugin on every worker. Two runs (three with the stress run), each
# without [Disruptive] specs and zonepath's own suite:
#   1. parallel (Ginkgo, KIND_UPSTREAM_PROCS processes, default 4): focus
#      External.Storage without [Serial], and of the [Feature:] specs only
#      those of what zonepath has beyond kubernetes-csi CI's selection
#      (which skips \[Feature:): the [Feature:VolumeAttributesClass] specs
#      (ModifyVolume), the [Feature:VolumeSnapshotDataSource] specs (every
#      snapshot spec of the suites: snapshottable, provisioning from a
#      snapshot, ephemeral and multivolume) and the
#      [Feature:volumegroupsnapshot] specs (volumegroupsnapshottable), in
#      one run rather than one per selection, so that no run ends on a
#      long group spec with three processes idle (on 2 cores, measured,
#      this gained nothing: the specs are CPU-bound, kind/README.md);
#   2. serial (one process): the [Serial] specs of the suites that matter
#      here (volumeLimits, topology, read-write-once-pod) and of those
#      features, not [Slow] (volumegroupsnapshotclass: default group
#      classes);
#   3. stress, only with KIND_UPSTREAM_STRESS=1: the [Serial] [Slow]
#      snapshot stress suites, one process: snapshottable-stress (many
#      pods' volumes snapshotted at once) and
#      volumegroupsnapshottable-stress (a StatefulSet's claims cut as one
#      group several times at once), with the stress options of the driver
#      file.
# The feature specs are chosen by their Ginkgo labels (Feature:<name>,
# which the e2e framework gives every [Feature:<name>] tag), so a spec
# that also needs a feature outside the list is still chosen, as by the
# regular expression \[Feature:(...)\] before.
# KIND_UPSTREAM_RUNS picks runs by name (default: parallel and serial, and
# stress with KIND_UPSTREAM_STRESS=1), e.g. KIND_UPSTREAM_RUNS=stress on a
# cluster a full run left up; KIND_UPSTREAM_LIST=1 prints what each run
# would run and stops, before touching the cluster.
# Then a table upstream suite → passed/failed/skipped with every skip's
# reason (e2e/cmd/suitetable), in _output/kind-upstream/summary.txt, and
# losetup -a of every node. Fails on any failure.
#
# Usage: VERSION=<image tag> kind/upstream.sh   (make kind-upstream sets it)
set -euo pipefail
cd "$(dirname "$0")/.."

: "${VERSION:?VERSION is the tag make images gave the images}"
CLUSTER=${KIND_CLUSTER_NAME:-zonepath}
KUBECONFIG=${KIND_KUBECONFIG:-$PWD/_output/kind/kubeconfig}
PROCS=${KIND_UPSTREAM_PROCS:-4}
FOCUS=${KIND_UPSTREAM_FOCUS:-External.Storage}
# The [Serial] suites that matter for a zonal driver with attach limits
# and ReadWriteOncePod;
# topology has none today, and any-volume-datasource tests a populator,
# not the driver.
SERIAL_SUITES=${KIND_UPSTREAM_SERIAL_SUITES:-'(volumeLimits|topology|read-write-once-pod)'}
# The [Feature:] specs of what zonepath has beyond kubernetes-csi CI's
# selection, a Ginkgo label set: VolumeAttributesClasses, and snapshots,
# which Kubernetes v1.37 tags [Feature:VolumeSnapshotDataSource] everywhere
# (snapshottable, provisioning, ephemeral, multivolume), so a \[Feature:
# skip leaves every one of them out; and group snapshots
# ([Feature:volumegroupsnapshot], the class in
# e2e/testdata/kind/groupsnapshotclass.yaml).
FEATURES=${KIND_UPSTREAM_FEATURES:-'VolumeAttributesClass, VolumeSnapshotDataSource, volumegroupsnapshot'}
STRESS=${KIND_UPSTREAM_STRESS:-0}
LIST=${KIND_UPSTREAM_LIST:-0}
# Switches are 0 or 1: "true" taken for 0 would run what was not asked for.
for sw in "KIND_UPSTREAM_STRESS=$STRESS" "KIND_UPSTREAM_LIST=$LIST"; do
  case ${sw#*=} in
  0 | 1) ;;
  *) echo "kind-upstream: ${sw%%=*}=${sw#*=}: want 0 or 1" >&2; exit 2 ;;
  esac
done
# Not ${KIND_UPSTREAM_RUNS:-...$(...)}: the assignment takes the status of
# the substitution, and a test false there ended the script under set -e,
# silently (1e84e87).
RUNS=${KIND_UPSTREAM_RUNS:-parallel serial}
if [ -z "${KIND_UPSTREAM_RUNS:-}" ] && [ "$STRESS" = 1 ]; then
  RUNS+=" stress"
fi
# Never run: [Disruptive] specs (also left out by label, below: a tag
# that is only text is caught here) and zonepath's own suite, which make
# kind-e2e runs.
SKIP='\[Disruptive\]|\[Testpattern: [^]]*\] zonepath '
# Specs without a feature, or with one of FEATURES.
CHOSEN="(Feature: isEmpty || Feature: containsAny {$FEATURES})"

# plan NAME: what run NAME runs, into PLAN: its Ginkgo processes, label
# filter and focus regexps (a spec runs when it matches one of them and
# the filter); false when NAME is no run.
plan() {
  case $1 in
  parallel) PLAN=("$PROCS" "!Serial && !Disruptive && $CHOSEN" "$FOCUS") ;;
  serial) PLAN=(1 "Serial && !Slow && !Disruptive && $CHOSEN" "$FOCUS.*\\] $SERIAL_SUITES " "$FOCUS.*\\[Feature:") ;;
  stress) PLAN=(1 "Serial && !Disruptive" "$FOCUS.*\\] (snapshottable|volumegroupsnapshottable)-stress ") ;;
  *) return 1 ;;
  esac
}

# describe NAME PROCS LABELS FOCUS...: one line saying what a run runs.
describe() {
  local name=$1 procs=$2 labels=$3
  shift 3
  echo "run $name: $procs process(es), focus$(printf " '%s'" "$@"), labels '$labels'"
}

# Every run is known before anything is deployed; KIND_UPSTREAM_LIST=1
# only says what each would run (no cluster needed).
for r in $RUNS; do
  plan "$r" || { echo "kind-upstream: KIND_UPSTREAM_RUNS: unknown run $r (parallel, serial, stress)" >&2; exit 2; }
done
if [ "$LIST" = 1 ]; then
  for r in $RUNS; do
    plan "$r"
    describe "$r" "${PLAN[@]}"
  done
  exit 0
fi

out=$PWD/_output/kind-upstream
export KUBECONFIG
# shellcheck source=kind/stack.sh
source kind/stack.sh
stack_begin kind-upstream
rm -rf "$out"
mkdir -p "$out"
# The Ginkgo CLI runs precompiled suites whose file name ends in .test,
# from the directory they are in: paths given to them are absolute.
ln -s "$PWD/bin/zonepath-e2e" "$out/zonepath-e2e.test"

# suite NAME PROCS LABELS FOCUS...: one Ginkgo run of the upstream suites,
# the specs that match a FOCUS and the label filter LABELS.
suite() {
  local name=$1 procs=$2 labels=$3 rc=0 start=$SECONDS focus
  shift 3
  step "$(describe "$name" "$procs" "$labels" "$@")"
  local args=()
  for focus; do args+=(--focus="$focus"); done
  bin/ginkgo --procs="$procs" --timeout=90m --no-color \
    "${args[@]}" --skip="$SKIP" --label-filter="$labels" \
    --junit-report="junit-$name.xml" --output-dir="$out" \
    "$out/zonepath-e2e.test" -- \
    --kubeconfig "$KUBECONFIG" --zonepath.upstream-suites \
    --storage.testdriver "$PWD/e2e/testdata/kind/upstream.yaml" \
    --e2e-output-dir "$out/$name" 2>&1 | tee "$out/$name.txt" || rc=$?
  step "run $name: exit $rc in $((SECONDS - start))s"
}

stack_deploy deploy/overlays/kind
# Upstream's suites take the driver to be on every schedulable node (the
# volumeLimits suite checks each node's CSINode): the workers
# kind/cluster.yaml keeps without it for KEP-5030 get the node plugin for
# this run (make kind-e2e takes it away again).
# shellcheck disable=SC2046 # one argument per node
stack_node_plugins true $(kubectl get nodes -l zonepath.csi.dev/node-plugin -o name | sed 's|^node/||')
# The group snapshot suites copy this class's parameters
# (upstream.yaml, GroupSnapshotClass.FromExistingClassName).
kubectl apply -f e2e/testdata/kind/groupsnapshotclass.yaml >/dev/null
junits=()
for r in $RUNS; do
  plan "$r"
  suite "$r" "${PLAN[@]}"
  junits+=("$out/junit-$r.xml")
done
stack_logs "$out/logs.txt"
stack_loops | tee "$out/losetup.txt"
step "summary (also in $out/summary.txt)"
go run ./e2e/cmd/suitetable "${junits[@]}" | tee "$out/summary.txt"
