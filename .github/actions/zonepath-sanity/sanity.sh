#!/usr/bin/env bash
# Builds and runs zonepath-sanity for the zonepath-sanity composite action
# (action.yml beside this file), from the checkout the action runs from.
# The action's inputs arrive in the environment, never spliced into shell
# text, so no input can inject a command:
#   ZP_ENDPOINT  CSI endpoint (required for run)
#   ZP_CONFIG    --zonepath.config file (optional)
#   ZP_JUNIT     JUnit report file (optional)
#   ZP_ARGS      more arguments (optional): words on one or several lines,
#                split on blanks and newlines, with '...', "..." and \ quoting
#                as xargs reads them; never evaluated ($(...), `...`, ; stay
#                literal text)
#   ZP_SUDO      auto (default): run the binary with sudo when not root and
#                sudo needs no password; true: always through sudo unless
#                root; false: as the calling user
#   ZP_VERSION   version stamped into the binary (default devel)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
# shellcheck source=.github/actions/lib/words.sh
source "$root/.github/actions/lib/words.sh"
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
  words extra "${ZP_ARGS:-}" args
  args+=("${extra[@]}")
  local runner=()
  privilege runner
  echo "zonepath-sanity: running$(printf ' %q' "${runner[@]}" "$bin" "${args[@]}")"
  exec "${runner[@]}" "$bin" "${args[@]}"
}

# privilege sets the array named $1 to the command prefix the binary runs
# under. A driver that mounts runs as root and so, often, does its socket;
# GitHub's runners run steps as an unprivileged user with passwordless sudo.
# The JUnit report is created first, so that root only writes into the
# caller's file and later steps can remove it.
privilege() {
  local -n prefix=$1
  prefix=()
  case "${ZP_SUDO:-auto}" in
    false) return ;;
    auto | true) ;;
    *) echo "zonepath-sanity: the sudo input is auto, true or false, not ${ZP_SUDO}" >&2; exit 2 ;;
  esac
  [[ "$(id -u)" != 0 ]] || return 0
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    [[ -z "${ZP_JUNIT:-}" ]] || : >>"$ZP_JUNIT"
    prefix=(sudo -n --)
  elif [[ "${ZP_SUDO:-auto}" == true ]]; then
    echo "zonepath-sanity: sudo: true, but sudo is missing or asks for a password" >&2
    exit 2
  else
    echo "zonepath-sanity: not root and no passwordless sudo: running as $(id -un); a root-owned socket will refuse it" >&2
  fi
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) usage ;;
esac
