# shellcheck shell=bash
# Shared by the composite actions' scripts (sourced, not run).

# words ARRAY TEXT INPUT splits TEXT into the array named ARRAY the way
# xargs splits its input: on blanks and newlines, with '...', "..." and
# backslash quoting, never expanding anything. So a vendor passes a
# --ginkgo.focus pattern with spaces, on one line or several, and no input
# can run a command. INPUT names the action input in the error.
words() {
  local -n into=$1
  local split
  split="$(mktemp)"
  if ! xargs -r printf '%s\0' <<<"$2" >"$split"; then
    rm -f "$split"
    echo "${0##*/}: the $3 input has an unmatched quote (quotes do not span lines)" >&2
    exit 2
  fi
  mapfile -d '' -t into <"$split"
  rm -f "$split"
}
