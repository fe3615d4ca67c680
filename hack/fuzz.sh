#!/usr/bin/env bash
# Runs every fuzz target of the repository for a bounded time each.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-10s}"
status=0
while read -r pkg; do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $target for $fuzztime"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" || status=1
  done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sort -u | sed 's|^\.|github.com/zonepath/zonepath|')
exit $status
