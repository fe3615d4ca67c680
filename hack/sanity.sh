#!/usr/bin/env bash
# Runs the sanity suites against bin/zonepath on a unix socket, the way a
# vendor runs them against their driver:
#   1. upstream csi-sanity (csi-test v5.6.0), one broken test skipped;
#   2. bin/zonepath-sanity: the upstream suite plus the zonepath extensions,
#      the volume health ones with zone-a taken down by an outage fault rule;
#   3. bin/zonepath-sanity against the driver with
#      SNAPSHOT_ACCESSIBILITY_CONSTRAINTS switched off: no failures, clear skips.
# JUnit reports and driver logs go to _output/sanity/.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${SANITY_OUT:-$PWD/_output/sanity}"
work="$(mktemp -d /tmp/zonepath-sanity.XXXXXX)"
mkdir -p "$out"
driver_pid=""
stop_driver() {
  if [[ -n "$driver_pid" ]]; then kill "$driver_pid" 2>/dev/null || true; wait "$driver_pid" 2>/dev/null || true; fi
  driver_pid=""
}
trap 'stop_driver; rm -rf "$work"' EXIT INT TERM

# The one upstream test skipped: it compares protobuf messages with gomega's
# Equal, which fails for any driver returning accessible_topology. The
# zonepath extension "makes a snapshot usable from its requisite" covers it.
skip="should succeed when creating a snapshot with accessibility requirements"

# start_driver NAME [flags...]: a fresh bin/zonepath in sanity/testdata/world.yaml.
start_driver() {
  local name=$1; shift
  rm -rf "$work/$name"; mkdir -p "$work/$name"
  sock="$work/$name/csi.sock"
  echo "sanity: starting bin/zonepath ($name) on unix://$sock"
  bin/zonepath --endpoint "unix://$sock" --nodeid sanity-node --node-zone zone-a \
    --state-dir "$work/$name/state" --topology-file sanity/testdata/world.yaml \
    --max-volumes-per-node 3 -v 2 "$@" >"$out/zonepath-$name.log" 2>&1 &
  driver_pid=$!
  for _ in $(seq 100); do [[ -S "$sock" ]] && return 0; sleep 0.1; done
  echo "sanity: driver did not start; its log:"; cat "$out/zonepath-$name.log"; exit 1
}

paths() { echo --csi.mountdir "$work/$1/mnt" --csi.stagingdir "$work/$1/staging"; }

# The mutable parameters upstream's ModifyVolume tests send (CreateVolume and
# ControllerModifyVolume): zonepath's IOPS tier (driver/README.md).
mutable=(--csi.testvolumemutableparameters sanity/testdata/mutable-parameters.yaml)

start_driver upstream
echo "sanity: [1/3] bin/csi-sanity (csi-test v5.6.0), skipping: $skip"
# shellcheck disable=SC2046
bin/csi-sanity --csi.endpoint "unix://$sock" $(paths upstream) --csi.testnodevolumeattachlimit "${mutable[@]}" \
  --ginkgo.skip "$skip" --ginkgo.junit-report "$out/csi-sanity.xml" --ginkgo.no-color | tee "$out/csi-sanity.txt"
stop_driver

# The volume health extensions take the node's zone down by an outage fault
# rule (driver/faults/README.md) and bring it back by removing it.
faults="$work/faults-zonepath.yaml"
put_rules() { printf '%s\n' "$1" >"$faults.tmp" && mv "$faults.tmp" "$faults"; }
put_rules 'rules: []'
outage_rule='rules: [{name: sanity-outage, match: {segment: {topology.kubernetes.io/zone: zone-a}}, action: {outage: true}}]'
start_driver zonepath --fault-rules "$faults" --fault-rules-reload-interval 100ms
echo "sanity: [2/3] bin/zonepath-sanity: upstream suite and zonepath extensions"
# shellcheck disable=SC2046
bin/zonepath-sanity --csi.endpoint "unix://$sock" $(paths zonepath) --csi.testnodevolumeattachlimit "${mutable[@]}" \
  --zonepath.config sanity/testdata/zonepath.yaml --ginkgo.junit-report "$out/zonepath-sanity.xml" --ginkgo.no-color \
  --zonepath.outage-command "printf '%s\\n' '$outage_rule' > $faults.tmp && mv $faults.tmp $faults" \
  --zonepath.recover-command "printf 'rules: []\\n' > $faults.tmp && mv $faults.tmp $faults" \
  | tee "$out/zonepath-sanity.txt"
stop_driver

start_driver no-snapshot-topology --disable-capabilities SNAPSHOT_ACCESSIBILITY_CONSTRAINTS
echo "sanity: [3/3] bin/zonepath-sanity against a driver without SNAPSHOT_ACCESSIBILITY_CONSTRAINTS"
# shellcheck disable=SC2046
bin/zonepath-sanity --csi.endpoint "unix://$sock" $(paths no-snapshot-topology) "${mutable[@]}" \
  --zonepath.config sanity/testdata/zonepath.yaml --ginkgo.junit-report "$out/zonepath-sanity-no-snapshot-topology.xml" \
  --zonepath.upstream=false --ginkgo.no-color | tee "$out/no-snapshot-topology.txt"
stop_driver

# One closing line over the three runs, from Ginkgo's own totals.
cat "$out/csi-sanity.txt" "$out/zonepath-sanity.txt" "$out/no-snapshot-topology.txt" |
  sed -n 's/.*-- \([0-9]*\) Passed | \([0-9]*\) Failed | [0-9]* Pending | \([0-9]*\) Skipped.*/\1 \2 \3/p' |
  awk '{p += $1; f += $2; s += $3} END {printf "sanity: %d passed, %d failed, %d skipped\n", p, f, s}'
