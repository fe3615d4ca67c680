# shellcheck shell=bash
# Shared by kind/e2e.sh and kind/upstream.sh (sourced, not run):
# install the zonepath stack from a deploy/ overlay into the kind cluster of
# make kind-up and wait until kubelet has registered the driver, with the
# image overrides a user gives in the environment.
#
# Needs: VERSION (the tag make images gave), KUBECONFIG, CLUSTER and out (the
# results directory); stack_begin first.
#
# Image overrides (an upstream build from an open pull request, say):
#   DRIVER_IMAGE, PROVISIONER_IMAGE, SNAPSHOTTER_IMAGE, SCHEDULER_IMAGE,
#   RESIZER_IMAGE, ATTACHER_IMAGE, SNAPSHOT_CONTROLLER_IMAGE=name:tag|name@digest
#   KIND_E2E_COMPONENTS="upstream-provisioner ..."  deploy/components to add
#   KIND_E2E_SCHEDULER=stock  keep kind's own kube-scheduler (upstream's,
#     without SnapshotTopology) instead of replacing it with zonepath-scheduler

kubectl() { bin/kubectl "$@"; }
stack_now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }

# stack_begin NAME: what every kind run starts with: progress lines
# "NAME: [elapsed] ..." from step, and a clear error when make kind-up's
# kubeconfig is missing.
stack_begin() {
  STACK_RUN=$1
  STACK_T0=$(stack_now)
  [ -f "$KUBECONFIG" ] || { echo "$STACK_RUN: no kubeconfig at $KUBECONFIG: run make kind-up first" >&2; exit 1; }
}
step() { echo "$STACK_RUN: [$(awk -v a="$STACK_T0" -v b="$(stack_now)" 'BEGIN { printf "%.1fs", b - a }')] $*"; }

# The manifest image each override replaces.
declare -A STACK_IMAGES=(
  [DRIVER_IMAGE]=localhost/zonepath/zonepath
  [PROVISIONER_IMAGE]=localhost/zonepath/zonepath-provisioner
  [SNAPSHOTTER_IMAGE]=localhost/zonepath/zonepath-snapshotter
  [SCHEDULER_IMAGE]=localhost/zonepath/zonepath-scheduler
  [RESIZER_IMAGE]=localhost/zonepath/zonepath-resizer
  [ATTACHER_IMAGE]=registry.k8s.io/sig-storage/csi-attacher
  [SNAPSHOT_CONTROLLER_IMAGE]=registry.k8s.io/sig-storage/snapshot-controller
)

# stack_overrides: hack/deploy-tag.sh flags for the overrides that are set,
# one per line.
stack_overrides() {
  local var c
  for var in "${!STACK_IMAGES[@]}"; do
    [[ -z ${!var:-} ]] || printf '%s\n' --image "${STACK_IMAGES[$var]}=${!var}"
  done
  for c in ${KIND_E2E_COMPONENTS:-}; do
    printf '%s\n' --component "deploy/components/$c"
  done
}

# stack_deploy OVERLAY: the CRDs, then OVERLAY tagged $VERSION with the
# overrides, applied server-side; then every workload rolled out, the
# scheduler replaced (unless stock) and the driver registered.
stack_deploy() {
  local overlay=$1 dir=$out/deploy/${1##*/} flags=()
  mapfile -t flags < <(stack_overrides)
  step "deploying CRDs"
  crds=$(kubectl apply --server-side -k deploy/crds -o name)
  # shellcheck disable=SC2086 # one argument per CRD
  kubectl wait --for condition=established --timeout=60s $crds >/dev/null
  step "deploying $overlay at tag $VERSION${flags[*]:+ with ${flags[*]}}"
  hack/deploy-tag.sh "$overlay" "$VERSION" "$dir" "${flags[@]}"
  kubectl apply --server-side --force-conflicts -k "$dir" >"$dir/apply.txt"
  stack_check_kube_proxy
  step "waiting for the rollout"
  if [ "${KIND_E2E_SCHEDULER:-}" = stock ]; then
    stack_stock_scheduler
  else
    stack_replace_scheduler
  fi
  local w
  for w in $(kubectl -n zonepath-system get deploy,daemonset -o name); do
    kubectl -n zonepath-system rollout status "$w" --timeout=300s
  done
  step "waiting for kubelet's registration of zonepath.csi.dev on every node that runs the node plugin"
  stack_wait_registered
}

# stack_check_kube_proxy: kube-proxy's ClusterIP map must not be empty on
# any node. In the offline node image (kube-proxy v1.37 in nftables mode
# with Debian's nft) a kube-proxy sometimes never finishes its first sync,
# and its hourly full resync has been seen to leave the map empty on every
# node; either way no new pod on that node reaches the API server through
# the kubernetes Service ("connection refused"). A node whose map stays
# empty for 30 s gets its kube-proxy restarted, up to 5 times, each logged
# as a workaround, as kind/up.sh logs its own.
stack_check_kube_proxy() {
  local n try
  for n in $(bin/kind get nodes --name "$CLUSTER"); do
    for try in 1 2 3 4 5 6; do
      stack_service_map "$n" 30 && continue 2
      [ "$try" -lt 6 ] || break
      step "workaround: kube-proxy on $n has written no ClusterIP map (nft map ip kube-proxy service-ips) in 30s: restarting it (try $try of 5)"
      kubectl -n kube-system delete pod -l k8s-app=kube-proxy --field-selector spec.nodeName="$n" >/dev/null
    done
    echo "kind: kube-proxy on $n wrote no ClusterIP map after 5 restarts" >&2
    return 1
  done
}

# stack_service_map NODE SECONDS: NODE's kube-proxy ClusterIP map has
# elements within SECONDS.
stack_service_map() {
  local deadline=$((SECONDS + $2))
  until docker exec "$1" nft list map ip kube-proxy service-ips 2>/dev/null | grep -q 'elements'; do
    ((SECONDS < deadline)) || return 1
    sleep 2
  done
}

# stack_replace_scheduler stops the stock kube-scheduler (kubelet removes a
# static pod whose manifest leaves its manifests directory) once
# zonepath-scheduler runs, which the stock one had to place, and waits until
# zonepath-scheduler holds the kube-scheduler lease it takes over.
stack_replace_scheduler() {
  local node=$CLUSTER-control-plane holder deadline=$((SECONDS + 120))
  kubectl -n zonepath-system rollout status deploy/zonepath-scheduler --timeout=180s
  if docker exec "$node" test -f /etc/kubernetes/manifests/kube-scheduler.yaml; then
    docker exec "$node" mv /etc/kubernetes/manifests/kube-scheduler.yaml /etc/kubernetes/kube-scheduler.yaml.replaced
    step "stock kube-scheduler stopped on $node (its manifest is at /etc/kubernetes/kube-scheduler.yaml.replaced)"
  fi
  # The holder is <pod>_<uuid>: after a redeploy the old pod may still
  # hold the lease, so it must be a pod of the current rollout.
  until holder=$(kubectl -n kube-system get lease kube-scheduler -o jsonpath='{.spec.holderIdentity}') &&
    stack_current_scheduler "${holder%%_*}"; do
    if ((SECONDS > deadline)); then
      echo "kind: zonepath-scheduler did not take the kube-scheduler lease in 120s (holder: ${holder:-none})" >&2
      return 1
    fi
    sleep 2
  done
  step "zonepath-scheduler leads ($holder)"
}

# stack_stock_scheduler: kind's own kube-scheduler schedules, as upstream
# ships it (no SnapshotTopology): zonepath-scheduler scaled to 0, the
# static pod's manifest put back if a run moved it away, and the lease held
# by the stock scheduler (holder <node>_<uuid>).
stack_stock_scheduler() {
  local node=$CLUSTER-control-plane holder deadline=$((SECONDS + 120))
  kubectl -n zonepath-system scale deploy/zonepath-scheduler --replicas=0
  if docker exec "$node" test -f /etc/kubernetes/kube-scheduler.yaml.replaced; then
    docker exec "$node" mv /etc/kubernetes/kube-scheduler.yaml.replaced /etc/kubernetes/manifests/kube-scheduler.yaml
  fi
  until holder=$(kubectl -n kube-system get lease kube-scheduler -o jsonpath='{.spec.holderIdentity}') &&
    [[ $holder == "$node"_* ]]; do
    if ((SECONDS > deadline)); then
      echo "kind: the stock kube-scheduler did not take its lease in 120s (holder: ${holder:-none})" >&2
      return 1
    fi
    sleep 2
  done
  step "KIND_E2E_SCHEDULER=stock: kind's kube-scheduler leads ($holder); zonepath-scheduler scaled to 0"
}

# stack_current_scheduler POD: POD is a running zonepath-scheduler pod of
# the Deployment's newest ReplicaSet.
stack_current_scheduler() {
  local rs
  rs=$(kubectl -n zonepath-system get rs -l app.kubernetes.io/name=zonepath-scheduler \
    -o jsonpath='{range .items[?(@.status.replicas>0)]}{.metadata.name}{"\n"}{end}')
  [[ $(wc -l <<<"$rs") -eq 1 && $1 == "$rs"-* ]] &&
    [[ $(kubectl -n zonepath-system get pod "$1" -o jsonpath='{.status.phase}' 2>/dev/null) == Running ]]
}

# stack_plugin_nodes: the nodes the node plugin DaemonSet runs on.
stack_plugin_nodes() {
  kubectl -n zonepath-system get pods -l app.kubernetes.io/name=zonepath-node -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}'
}

# stack_wait_registered waits until the CSINode of every node running the
# node plugin lists the driver.
stack_wait_registered() {
  local deadline=$((SECONDS + 180)) missing
  while :; do
    missing=$(stack_plugin_nodes | while read -r n; do
      kubectl get csinode "$n" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | grep -qw zonepath.csi.dev || echo "$n"
    done)
    [ -z "$missing" ] && break
    if ((SECONDS > deadline)); then
      echo "kind: CSINode without zonepath.csi.dev after 180s: $missing" >&2
      return 1
    fi
    sleep 2
  done
  kubectl get csinode -o custom-columns='NODE:.metadata.name,DRIVERS:.spec.drivers[*].name,COUNT:.spec.drivers[*].allocatable.count' | tee "$out/csinodes.txt"
}

# stack_node_plugins VALUE NODE...: labels each NODE
# zonepath.csi.dev/node-plugin=VALUE, which the node plugin DaemonSet's node
# affinity reads ("false" keeps it off), and waits until the driver is
# registered there (true) or gone from its CSINode (false).
stack_node_plugins() {
  local value=$1 n deadline=$((SECONDS + 180)) want
  shift
  [ $# -gt 0 ] || return 0
  kubectl label node "$@" zonepath.csi.dev/node-plugin="$value" --overwrite >/dev/null
  [ "$value" = false ] && want=1 || want=0
  for n in "$@"; do
    until kubectl get csinode "$n" -o jsonpath='{.spec.drivers[*].name}' 2>/dev/null | grep -qw zonepath.csi.dev; [ $? = "$want" ]; do
      if ((SECONDS > deadline)); then
        echo "kind: zonepath.csi.dev still $([ "$value" = false ] && echo registered || echo unregistered) on $n 180s after labelling it node-plugin=$value" >&2
        return 1
      fi
      sleep 2
    done
  done
  step "node plugin $([ "$value" = false ] && echo off || echo on) $*"
}

# stack_logs FILE: every zonepath container's log.
stack_logs() {
  kubectl -n zonepath-system logs --selector app.kubernetes.io/part-of=zonepath --all-containers --prefix \
    --tail=-1 --max-log-requests 30 >"$1" 2>&1 || true
}

# stack_loops: losetup -a on every node (loop devices are the kernel's, so
# each node shows the host's); the run must leave none of the driver's.
stack_loops() {
  local n
  for n in $(bin/kind get nodes --name "$CLUSTER"); do
    echo "== $n: losetup -a"
    docker exec "$n" losetup -a 2>&1 || true
  done
}
