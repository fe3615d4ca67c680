#!/usr/bin/env bash
# make deploy-check: `kubectl apply --dry-run=server -k` of every
# kustomization under deploy/ (or of the ones given) against a running
# cluster, so that the API server itself validates every object: schemas,
# CRD-defined fields, immutable fields of objects already there, admission.
# make conformance runs it against its fake-zones e2e cluster.
#
# The namespace zonepath-system is created for real first (a dry-run of
# namespaced objects needs it to exist); the snapshot CRDs must be installed
# (kubectl apply -k deploy/crds), since a dry-run does not install them for
# the VolumeSnapshotClasses that follow. Fails when any dry-run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 --kubeconfig FILE [KUSTOMIZATION-DIR...]" >&2; exit 2; }

# kustomizations lists deploy/'s kustomizations, Components (which render
# only inside one) and test data excepted.
kustomizations() {
  local file
  find deploy -name kustomization.yaml -not -path '*/testdata/*' | sort | while read -r file; do
    grep -q '^kind: Component' "$file" || dirname "$file"
  done
}

main() {
  local kubeconfig="" dir out line start failed=()
  while [ $# -gt 0 ]; do
    case $1 in
      --kubeconfig) [ $# -ge 2 ] || usage; kubeconfig=$2; shift 2 ;;
      --kubeconfig=*) kubeconfig=${1#*=}; shift ;;
      -h|--help) usage ;;
      -*) echo "$0: unknown flag $1" >&2; usage ;;
      *) break ;;
    esac
  done
  [ -n "$kubeconfig" ] || usage
  [ -f "$kubeconfig" ] || { echo "deploy-check: kubeconfig $kubeconfig does not exist: is the cluster up?" >&2; exit 1; }
  [ -x bin/kubectl ] || { echo "deploy-check: bin/kubectl missing: run make components" >&2; exit 1; }
  local -a dirs=("$@")
  [ ${#dirs[@]} -gt 0 ] || mapfile -t dirs < <(kustomizations)
  kubectl() { bin/kubectl --kubeconfig "$kubeconfig" "$@"; }

  if ! kubectl get crd volumesnapshotclasses.snapshot.storage.k8s.io >/dev/null 2>&1; then
    echo "deploy-check: the snapshot CRDs are not installed; run kubectl apply -k deploy/crds first" >&2
    exit 1
  fi
  echo "deploy-check: creating namespace zonepath-system (needed by the dry-runs of namespaced objects)"
  kubectl apply -f deploy/base/namespace.yaml

  for dir in "${dirs[@]}"; do
    start=$SECONDS
    if out=$(kubectl apply --dry-run=server -k "$dir" 2>&1); then
      printf 'deploy-check: %-40s ok, %d objects, %ds\n' "$dir" "$(grep -c '(server dry run)' <<<"$out")" $((SECONDS - start))
    else
      echo "deploy-check: $dir FAILED:"
      while IFS= read -r line; do echo "  $line"; done <<<"$out"
      failed+=("$dir")
    fi
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "deploy-check: server dry-run failed for: ${failed[*]}" >&2
    exit 1
  fi
  echo "deploy-check: all ${#dirs[@]} kustomizations pass kubectl apply --dry-run=server"
}

main "$@"
