#!/usr/bin/env bash
# Builds and runs zonepath-sanity for the zonepath-sanity composite action
# (action.yml beside this file), from the checkout the action runs from.
# The action's inputs arrive in the environment, never spliced into shell
# text, so no input can inject a command:
#   ZP_ENDPOINT  CSI endpoint (required for run)
#   ZP_CONFIG    --zonepath.config file (optional)
#   ZP_JUNIT     JUnit report file (optional)
#   ZP_ARGS      more arguments, split on whitespace (optional)
#   ZP_VERSION   version stamped into the binary (default devel)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
bin="$root/bin/zonepath-sanity"

usage() {
  echo "usage: $0 build|run" >&2
  exit 2
}

# build compiles bin/zonepath-sanity in the action's checkout: `go install
# module@version` refuses zonepath's module, whose go.mod has replace lines.
build() {
  local version="${ZP_VERSION:-devel}"
  echo "zonepath-sanity: building $version from $root"
  go build -C "$root" -ldflags "-X main.version=$version" -o "$bin" ./sanity/cmd/zonepath-sanity
}

run() {
  local args=(--csi.endpoint "${ZP_ENDPOINT:?the endpoint input is required}" --ginkgo.no-color)
  if [[ -n "${ZP_CONFIG:-}" ]]; then
    [[ -f "$ZP_CONFIG" ]] || { echo "zonepath-sanity: config file $ZP_CONFIG (input config) does not exist" >&2; exit 2; }
    args+=(--zonepath.config "$ZP_CONFIG")
  fi
  if [[ -n "${ZP_JUNIT:-}" ]]; then
    mkdir -p "$(dirname "$ZP_JUNIT")"
    args+=(--ginkgo.junit-report "$ZP_JUNIT")
  fi
  local extra=()
  read -r -a extra <<<"${ZP_ARGS:-}"
  args+=("${extra[@]}")
  echo "zonepath-sanity: running zonepath-sanity ${args[*]}"
  exec "$bin" "${args[@]}"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) usage ;;
esac
