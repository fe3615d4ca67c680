#!/usr/bin/env bash
# Runs every fuzz target of the repository, sharing one total time budget
# between them (make fuzz FUZZ_BUDGET=60s; .ci/run spends it). Their seed
# corpora need no fuzzing time: plain `go test` runs every Fuzz function on
# its seeds, so make test covers them without this script.
#
# Go before 1.27 can fail a target with a bare "context deadline exceeded"
# just as -fuzztime ends, a race in its fuzz coordinator
# (https://go.dev/issue/75804) that writes no failing input. Such a run is
# tried once more; a run that writes a failing input, or fails in any
# other way, fails at once.
#
# Usage: hack/fuzz.sh [BUDGET]   (whole seconds or minutes: 60s, 10m; default 60s)
set -euo pipefail
cd "$(dirname "$0")/.."
budget="${1:-60s}"
case $budget in
  *[!0-9]*s | *[!0-9]*m | *[!0-9sm]* | [sm] | "") budget_s=0 ;;
  *s) budget_s=${budget%s} ;;
  *m) budget_s=$(( ${budget%m} * 60 )) ;;
  *) budget_s=0 ;;
esac
if [ "$budget_s" -lt 1 ]; then
  echo "fuzz: the budget must be whole seconds or minutes, like 60s or 10m; got '$budget'" >&2
  exit 2
fi
status=0

# fuzz PKG TARGET: 0 on success; 2 on the coordinator's deadline race; 1 otherwise.
fuzz() {
  local out rc=0
  out=$(go test -run '^$' -fuzz "^${2}\$" -fuzztime "$fuzztime" "$1" 2>&1) || rc=$?
  echo "$out"
  if [ "$rc" -eq 0 ]; then return 0; fi
  if grep -q '^    context deadline exceeded$' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
    return 2
  fi
  return 1
}

# Every target as "package target", listed before any is run so that the
# budget can be shared out.
targets=()
while read -r pkg; do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    targets+=("$pkg $target")
  done
done < <(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sort -u | sed 's|^\.|github.com/zonepath/zonepath|')
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no fuzz target found" >&2
  exit 1
fi
each=$((budget_s / ${#targets[@]}))
[ "$each" -ge 1 ] || each=1
fuzztime="${each}s"
echo "fuzz: ${#targets[@]} targets, ${fuzztime} each (budget ${budget})"

for t in "${targets[@]}"; do
  read -r pkg target <<<"$t"
  echo "fuzz: $pkg $target for $fuzztime"
  rc=0
  fuzz "$pkg" "$target" || rc=$?
  if [ "$rc" -eq 2 ]; then
    echo "fuzz: $target: bare 'context deadline exceeded' and no failing input (go.dev/issue/75804); once more"
    rc=0
    fuzz "$pkg" "$target" || rc=$?
  fi
  [ "$rc" -eq 0 ] || status=1
done
exit $status
