#!/usr/bin/env bash
# Makes sure a Docker daemon answers, for kind. When none does, installs
# Debian's docker.io (apt) if dockerd is missing and starts dockerd in the
# background, logging to _output/kind/dockerd.log. If the host's capability
# bounding set lacks CAP_SYS_RESOURCE, dockerd's default runtime becomes
# kind/runc-drop-missing-caps (installed under /usr/local/libexec), so
# that kind's privileged node containers can start; the choice is logged.
#
# Usage: kind/docker.sh
set -euo pipefail
# shellcheck source=kind/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

install_docker() {
	if command -v dockerd >/dev/null; then
		return
	fi
	log "no dockerd: installing Debian's docker.io with apt-get"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null
}

install_wrapper() {
	mkdir -p "$(dirname "$RUNC_WRAPPER")"
	install -m 0755 "$KIND_ROOT/kind/runc-drop-missing-caps" "$RUNC_WRAPPER"
}

start_dockerd() {
	local args=() i
	if needs_cap_workaround; then
		log "workaround: the capability bounding set lacks CAP_SYS_RESOURCE, so runc cannot start" \
			"privileged containers; dockerd's default runtime drops missing capabilities ($RUNC_WRAPPER)"
		install_wrapper
		args+=(--add-runtime "zonepath-runc=$RUNC_WRAPPER" --default-runtime zonepath-runc)
	fi
	mkdir -p "$KIND_OUT"
	log "starting dockerd ${args[*]} (log: $KIND_OUT/dockerd.log)"
	nohup dockerd "${args[@]}" >>"$KIND_OUT/dockerd.log" 2>&1 </dev/null &
	for ((i = 0; i < 60; i++)); do
		docker info >/dev/null 2>&1 && return
		sleep 1
	done
	die "dockerd did not answer within 60s; see $KIND_OUT/dockerd.log"
}

main() {
	if docker info >/dev/null 2>&1; then
		return
	fi
	install_docker
	step "starting a Docker daemon" start_dockerd
}

main "$@"
