#!/usr/bin/env bash
# Builds and runs zonepath-e2e (the e2e suite, e2e/) for the zonepath-e2e
# composite action (action.yml beside this file), from the checkout the
# action runs from. The action's inputs arrive in the environment, never
# spliced into shell text, so no input can inject a command:
#   ZP_KUBECONFIG    the cluster's kubeconfig (required for run)
#   ZP_TESTDRIVER    upstream's driver file, --storage.testdriver (required)
#   ZP_DRIVER_EXT    zonepath's extension file, --zonepath.driver-ext (required)
#   ZP_LABEL_FILTER  --ginkgo.label-filter (optional)
#   ZP_JUNIT         JUnit report file (optional)
#   ZP_ARGS          more arguments (optional), split as ../lib/words.sh says
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
# shellcheck source=.github/actions/lib/words.sh
source "$root/.github/actions/lib/words.sh"
bin="$root/bin/zonepath-e2e"

usage() {
  echo "usage: $0 build|run" >&2
  exit 2
}

# build compiles the suite as upstream builds e2e.test (make build does
# the same): a test binary of the e2e package.
build() {
  echo "zonepath-e2e: building from $root"
  go test -C "$root" -c -o "$bin" ./e2e
}

# file VALUE INPUT: VALUE must name an existing file.
file() {
  [[ -n $1 ]] || { echo "zonepath-e2e: the $2 input is required" >&2; exit 2; }
  [[ -f $1 ]] || { echo "zonepath-e2e: $1 (input $2) does not exist" >&2; exit 2; }
}

run() {
  file "${ZP_KUBECONFIG:-}" kubeconfig
  file "${ZP_TESTDRIVER:-}" testdriver
  file "${ZP_DRIVER_EXT:-}" driver-ext
  local args=(--kubeconfig "$ZP_KUBECONFIG" --storage.testdriver "$ZP_TESTDRIVER"
    --zonepath.driver-ext "$ZP_DRIVER_EXT" --ginkgo.no-color)
  if [[ -n ${ZP_LABEL_FILTER:-} ]]; then
    args+=(--ginkgo.label-filter "$ZP_LABEL_FILTER")
  fi
  if [[ -n ${ZP_JUNIT:-} ]]; then
    mkdir -p "$(dirname "$ZP_JUNIT")"
    args+=(--ginkgo.junit-report "$ZP_JUNIT")
  fi
  local extra=()
  words extra "${ZP_ARGS:-}" args
  args+=("${extra[@]}")
  echo "zonepath-e2e: running$(printf ' %q' "$bin" "${args[@]}")"
  exec "$bin" "${args[@]}"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) usage ;;
esac
