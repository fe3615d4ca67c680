# One make vocabulary for people and CI. Every binary lands in bin/.
GO         ?= go
BIN        := $(CURDIR)/bin
OUT        := $(CURDIR)/_output
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
# Expanded once: every step of one make run tags and deploys the same
# version, even when HEAD moves while a long target runs.
VERSION    := $(VERSION)
# Kubernetes' release build flags (its hack/lib/golang.sh): -trimpath, so
# that a compiled package does not depend on the clone's path and a second
# clone reuses the build cache instead of compiling this repository again;
# -s -w (no symbol table, no DWARF), which links about 30% faster (a
# 170 MB test binary: 7.7 s against 11.2 s). DBG=1 keeps what a debugger
# needs. Scripts and tests that build run under the same GOFLAGS.
DBG        ?=
STRIP      := $(if $(filter 1,$(DBG)),,-s -w)
export STRIP
export GOFLAGS := -trimpath $(filter-out -trimpath,$(GOFLAGS))
LDFLAGS    := -X main.version=$(VERSION) $(STRIP)
# RACE=1: make test with the race detector, as .ci/run and the GitHub test
# job run it. Off by default, as in Kubernetes' own make test (KUBE_RACE):
# on 2 cores it makes a cold make test 3.5 minutes longer (vet 458 s
# against 340 s, test builds 208 s against 119 s), and without it make
# test and make conformance share one compiled dependency tree.
RACE       ?=
RACEFLAG   := $(if $(filter 1,$(RACE)),-race)
# make fuzz: the total time every fuzz target shares (hack/fuzz.sh).
FUZZ_BUDGET ?= 60s

.PHONY: all build crds test unit fuzz sanity bench conformance conformance-matrix e2e-mutants chaos components clean \
	fakezones-up fakezones-down fakezones-test bench-fakezones deploy-check kind-node-image kind-up kind-down kind-e2e kind-upstream

all: build

build: $(BIN)/zonepath $(BIN)/zonepath-sanity $(BIN)/csi-sanity $(BIN)/zonepath-cluster \
	$(BIN)/zonepath-provisioner $(BIN)/zonepath-snapshotter $(BIN)/zonepath-resizer \
	$(BIN)/zonepath-scheduler $(BIN)/zonepath-e2e crds

$(BIN)/zonepath: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./driver/cmd/zonepath

$(BIN)/zonepath-cluster: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./fakezones/cmd/zonepath-cluster

$(BIN)/zonepath-sanity: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./sanity/cmd/zonepath-sanity

# The e2e suite (e2e/), built as a test binary the way upstream builds
# e2e.test; run it against a cluster (e2e/README.md).
$(BIN)/zonepath-e2e: FORCE
	$(GO) test -c -ldflags "$(STRIP)" -o $@ ./e2e

# csi-provisioner v6.3.0's library with KEP-5943's snapshot topology for Immediate binding.
$(BIN)/zonepath-provisioner: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./controllers/cmd/zonepath-provisioner

# The snapshotter sidecar: upstream's sidecar controller with KEP-5943 topology.
$(BIN)/zonepath-snapshotter: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./controllers/cmd/zonepath-snapshotter

# The resizer: csi-resizer's job where its image cannot be pulled.
$(BIN)/zonepath-resizer: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./controllers/cmd/zonepath-resizer

# kube-scheduler with the SnapshotTopology plugin. Stamped with the
# Kubernetes version it is built from, the way hack/components.sh stamps
# kube-scheduler (k8s_ldflags there), so --version, the version metric and
# the feature gates' version all say v1.37.x rather than v0.0.0-master.
# Recursive variables: `go list` runs only when this binary is built.
K8S_VERSION  = $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes)
K8S_SEMVER   = $(subst ., ,$(patsubst v%,%,$(K8S_VERSION)))
K8S_LDFLAGS  = $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
	-X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=$(word 1,$(K8S_SEMVER)) -X $(p).gitMinor=$(word 2,$(K8S_SEMVER)))

$(BIN)/zonepath-scheduler: FORCE
	$(GO) build -ldflags "$(K8S_LDFLAGS) $(STRIP)" -o $@ ./controllers/cmd/zonepath-scheduler

# Test-only builds of zonepath-scheduler for make e2e-mutants, each with one
# mutation of controllers/scheduler/snapshottopology/mutants.go turned on
# by its build tag (zonepath_mutant_<name with underscores>). They go to
# bin/mutants/, which nothing but e2e/cmd/mutants runs.
SCHEDULER_MUTANTS := no-deletion-requeue reject-first-only
$(BIN)/mutants/zonepath-scheduler-%: FORCE
	$(GO) build -tags zonepath_mutant_$(subst -,_,$*) -ldflags "$(K8S_LDFLAGS) $(STRIP)" -o $@ ./controllers/cmd/zonepath-scheduler

# The upstream csi-sanity command, built from the csi-test module pinned in go.mod.
$(BIN)/csi-sanity: go.mod go.sum
	$(GO) build -ldflags "$(STRIP)" -o $@ github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity

## crds: the six external-snapshotter CRDs of the client/v8 module pinned in
## go.mod, with the KEP-5943 fields added, into bin/crds/ and into deploy/crds/
## beside its kustomization.yaml (git-ignored there; nothing upstream is
## committed here).
# `go mod download` first: `go list -m` names a module's directory without
# downloading it, and nothing before this step needs the client module, so on
# a fresh machine its directory would not exist yet.
SNAPSHOT_CLIENT := github.com/kubernetes-csi/external-snapshotter/client/v8
crds: $(BIN)/zonepath-crds
	$(GO) mod download $(SNAPSHOT_CLIENT)
	$(BIN)/zonepath-crds --out $(BIN)/crds \
		--from $$($(GO) list -m -f '{{.Dir}}' $(SNAPSHOT_CLIENT))/config/crd
	cp $(BIN)/crds/*.yaml deploy/crds/

$(BIN)/zonepath-crds: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./controllers/cmd/zonepath-crds

FORCE:

## test: unit tests and the in-process csi-sanity suite (RACE=1: with the race
## detector; every fuzz target runs on its seed corpus there), then actionlint over the
## workflows and the composite action. Fuzzing itself is make fuzz.
test: unit actionlint

# crds: deploy/render renders deploy/crds, which needs the generated CRDs.
unit: crds
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet $(RACEFLAG) $(UNIT_PKGS)
	$(GO) vet $(RACEFLAG) -tags livecluster ./bench/...
	$(GO) test $(RACEFLAG) -vet=off -ldflags "$(STRIP)" -count=1 $(UNIT_PKGS)

# Every package but the e2e suite's own (./e2e): make conformance builds it
# as bin/zonepath-e2e anyway, and vets it and runs its unit tests from that
# binary (hack/conformance.sh, step e2e-unit). Only it needs the Kubernetes
# e2e framework's tree (kubelet, cadvisor, kubectl: 393 packages no other
# package imports), about a minute of a cold make test. go list -e: a package
# that does not compile is still listed, so that vet and test fail on it.
UNIT_PKGS = $$($(GO) list -e ./... | grep -vx 'github.com/zonepath/zonepath/e2e')

# vet with go test's flags: vet needs its dependencies compiled, and compiled
# with the same flags they come from one build instead of two (on a cold
# cache the dependency tree is most of make test's time). go test -vet=off:
# go vet has just run every analyzer over the same packages and their tests.

## fuzz: every fuzz target for a share of FUZZ_BUDGET (default 60s in all);
## .ci/run runs it. make fuzz FUZZ_BUDGET=10m for a longer search.
fuzz:
	hack/fuzz.sh $(FUZZ_BUDGET)

## actionlint: actionlint (the Go module pinned in go.mod, hack/tools.go) over
## .github/workflows, which also checks the inputs workflows pass to local
## actions. actionlint never lints an action's own steps, so
## hack/cmd/actioncheck checks .github/actions/*/action.yml's composite rules and
## writes its steps as workflows under _output/actioncheck/ for actionlint; the
## example workflows of the actions are linted too.
.PHONY: actionlint
actionlint:
	rm -rf $(OUT)/actioncheck
	$(GO) run ./hack/cmd/actioncheck --out $(OUT)/actioncheck .github/actions/*/action.yml
	$(GO) run github.com/rhysd/actionlint/cmd/actionlint .github/workflows/*.yaml $(OUT)/actioncheck/*.yaml \
		.github/actions/*/example-workflow.yaml

## sanity: upstream csi-sanity, then zonepath-sanity (upstream suite plus the
## extensions), then zonepath-sanity against the driver without snapshot topology.
sanity: build
	hack/sanity.sh

## bench: the driver over its CSI socket against a null driver (bench/csibench,
## bench/nulldriver) at 1k and 10k objects, concurrency 1 and 8, and the
## scheduler plugin's Filter over 5,000 nodes; fails when a target is missed
## (bench/bench.sh, bench/README.md). A few minutes; output in _output/bench.txt.
bench:
	bench/bench.sh

## bench-scheduler: scheduler throughput (pods/s, p99 scheduling attempt) of
## zonepath-scheduler with SnapshotTopology against upstream kube-scheduler,
## on a fake-zones cluster (bench/schedbench); fails when a target of
## issue 14 is missed. Output also in _output/bench-scheduler.txt. Smaller:
## make bench-scheduler BENCH_SCHEDULER_FLAGS="-zones 9 -nodes 270 -pods 300"
BENCH_SCHEDULER_FLAGS ?=
.PHONY: bench-scheduler
bench-scheduler: build components
	@mkdir -p $(OUT)
	ZONEPATH_BIN=$(BIN) bash -o pipefail -c '$(GO) test -tags livecluster -count=1 -timeout 60m \
		-run "^$$" -bench "^BenchmarkSchedulerThroughput$$" -benchtime=1x -v ./bench/schedbench -args $(BENCH_SCHEDULER_FLAGS) \
		2>&1 | tee $(OUT)/bench-scheduler.txt'

## conformance: the main job. Conformance of the built-in driver on its own
## and in fake-zones clusters (hack/conformance.sh); results under
## _output/conformance/. The driver personalities are make conformance-matrix.
conformance: build components
	hack/conformance.sh

## conformance-matrix: zonepath-sanity and the e2e suite for every driver
## personality under e2e/testdata/personalities/ (issue 21), on one fake-zones
## cluster per personality that has a cluster.yaml, reused by those that name it
## (e2e/cmd/matrix). Prints a table personality → sanity and e2e passed/failed/skipped,
## wall time, and every skip with the capability that explains it; fails on any
## failure and on any skip its personality's lacks: do not explain
## (e2e/README.md, "Conformance matrix"). Output under _output/conformance-matrix/.
## A subset: make conformance-matrix MATRIX=prefixed,zone-only
## Six clusters at a time by default (the suites mostly wait: 7m13s for the
## seventeen personalities on 2 cores, 10m6s four at a time; late-ready's
## 5m14s the longest); fewer:
## make conformance-matrix MATRIX_FLAGS=--parallel=2
MATRIX ?=
MATRIX_FLAGS ?= --parallel=6
conformance-matrix: build components
	$(GO) run ./e2e/cmd/matrix --bin-dir $(BIN) --output-dir $(OUT)/conformance-matrix --only "$(MATRIX)" $(MATRIX_FLAGS)

## e2e-mutants: proves the e2e suite can fail. Runs it against broken
## fake-zones set-ups, one at a time (e2e/cmd/mutants: a driver fault rule, an
## upstream scheduler or provisioner, a test-only build of zonepath-scheduler
## in bin/mutants/, a cluster file change), prints a table
## mutant → scenarios failed, and fails unless each mutant is caught by the
## scenarios expected to catch it. Output under _output/e2e-mutants/.
## One mutant: make e2e-mutants MUTANTS=upstream-kube-scheduler
MUTANTS ?=
e2e-mutants: build components $(SCHEDULER_MUTANTS:%=$(BIN)/mutants/zonepath-scheduler-%)
	GO=$(GO) BIN=$(BIN) hack/components.sh csi-provisioner
	$(GO) run ./e2e/cmd/mutants --bin-dir $(BIN) --output-dir $(OUT)/e2e-mutants --only "$(MUTANTS)"

## chaos: snapshot → restore cycles on a fake-zones cluster of its own while
## the zonepath controller, each sidecar, the scheduler, snapshot-controller,
## kube-apiserver and etcd are SIGKILLed and restarted one at a time (a kill
## every 3 s), with lost replies and admin edits between a lost reply and its
## retry; then an orphan audit of the driver and the API (fakezones/chaos).
## The components run as deploy/rbac's ServiceAccounts, as in make conformance.
## Prints a table component → kills, operations, orphans, stuck; fails on any
## orphan, stuck object or failed cycle. At most 10 minutes; the cluster always stops.
## Output under _output/chaos/. Shorter, for CI: make chaos CHAOS_FLAGS="--duration 5m"
CHAOS_FLAGS ?=
chaos: build components
	$(BIN)/zonepath-cluster chaos --output-dir $(OUT)/chaos --rbac deploy/rbac $(CHAOS_FLAGS)

## fakezones-up / fakezones-down: a local multi-zone cluster of processes
## (fakezones/); kubeconfig at _output/fakezones/kubeconfig/admin.
## More nodes: make fakezones-up FAKEZONES_FLAGS="--zones 3 --nodes-per-zone 100"
FAKEZONES_FLAGS ?=
fakezones-up: build components
	$(BIN)/zonepath-cluster up --rbac deploy/rbac $(FAKEZONES_FLAGS)

fakezones-down:
	$(BIN)/zonepath-cluster down

## fakezones-test: the cluster tests, which start and stop clusters of their own.
fakezones-test: build components
	ZONEPATH_BIN=$(BIN) $(GO) test -tags livecluster -count=1 -v ./fakezones/...

## bench-fakezones: how long up takes to ready 1,020 nodes (target 15 s on 2
## cores) and the cluster's peak RSS per node; FAKEZONES_BENCH=Up/5010nodes
## for 5,010 nodes in 3 regions of 10 zones, FAKEZONES_BENCH=Up for both.
FAKEZONES_BENCH ?= Up/1020nodes
bench-fakezones: build components
	ZONEPATH_BIN=$(BIN) $(GO) test -tags livecluster -run '^$$' -bench '$(FAKEZONES_BENCH)' -benchtime=1x -count=1 -v ./fakezones/cluster/

## deploy-check: kubectl apply --dry-run=server -k of every kustomization under
## deploy/ against the cluster of DEPLOY_CHECK_KUBECONFIG (default: make
## fakezones-up's); creates namespace zonepath-system, needs the snapshot CRDs.
DEPLOY_CHECK_KUBECONFIG ?= $(OUT)/fakezones/kubeconfig/admin
deploy-check: crds
	hack/deploy-check.sh --kubeconfig $(DEPLOY_CHECK_KUBECONFIG)

## components: the fake-zones cluster's upstream binaries into bin/, versions
## stamped: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
## kubectl, kwok, snapshot-controller, csi-snapshotter, csi-attacher, from the
## modules pinned in go.mod (hack/tools.go) and hack/components/*/go.mod.
## One at a time (2 cores); go's build cache makes an unchanged rebuild take
## seconds. A subset, or the upstream provisioner the cluster no longer needs:
## make components COMPONENTS="csi-provisioner".
COMPONENTS ?=
components:
	GO=$(GO) BIN=$(BIN) hack/components.sh $(COMPONENTS)

## images: an image of each zonepath binary (localhost/zonepath/<binary>:$(VERSION))
## and offline stand-ins under the upstream names the manifests use
## (snapshot-controller, csi-attacher) and the e2e framework's images the
## storage suites pull (busybox, agnhost, nginx, glibc-dns-testing), built from
## bin/ and Debian packages without a Docker daemon: docker-archive tarballs in
## _output/images/, listed in _output/images/images.txt (hack/cmd/imagebuild/README.md).
## IMAGES_WITH=csi-provisioner adds upstream's csi-provisioner (its own
## Kubernetes build, six cold minutes), for PROVISIONER_IMAGE overrides.
## KIND_PULL_UPSTREAM_IMAGES=1 builds zonepath's own images only: kind-up
## loads no stand-in then (kubelet pulls upstream's), so none is built, nor
## agnhost, and Debian's packages for the stand-ins are not fetched.
.PHONY: images
IMAGES_WITH ?=
STAND_INS := $(if $(filter 1,$(KIND_PULL_UPSTREAM_IMAGES)),false,true)
images: build components
ifeq ($(STAND_INS),true)
	GO=$(GO) BIN=$(BIN) hack/components.sh agnhost $(IMAGES_WITH)
endif
	e2e=$$($(GO) run ./hack/cmd/e2eimage) && \
	$(GO) run ./hack/cmd/imagebuild --bin-dir $(BIN) --out-dir $(OUT)/images \
		--version $(VERSION) --e2e-images "$$e2e" --with "$(IMAGES_WITH)" --stand-ins=$(STAND_INS)

clean:
	rm -rf $(BIN) $(OUT)

## kind-node-image: the offline kind node image localhost/zonepath/kind-node:<k8s
## version> (kind/node-image.sh): a debootstrap bookworm rootfs, kubelet,
## kubeadm and the control-plane images from the pinned kubernetes module, all
## preloaded; starts Debian's dockerd when no Docker daemon answers. Reused
## when its inputs did not change. About 3 minutes with a warm Go cache, 15
## with a cold one (CoreDNS alone is 4 CPU-minutes) on 2 cores.
kind-node-image:
	GO=$(GO) BIN=$(BIN) OUT=$(OUT) kind/node-image.sh

## kind-up / kind-down: the kind cluster $(KIND_CLUSTER_NAME) from
## $(KIND_CONFIG), kubeconfig _output/kind/kubeconfig (kind/up.sh). Node
## image: KIND_NODE_IMAGE (with internet, e.g. one of the kindest/node images
## kind v0.33.0 pins, by digest), else the offline one, built when missing.
## Host workarounds only when detected, each logged. Loads the images listed
## in _output/images/images.txt when present (make images).
KIND_CLUSTER_NAME ?= zonepath
KIND_CONFIG       ?= kind/cluster.yaml
KIND_NODE_IMAGE   ?=
kind-up: $(BIN)/kind
	GO=$(GO) BIN=$(BIN) hack/components.sh kubectl
	GO=$(GO) BIN=$(BIN) OUT=$(OUT) KIND_CLUSTER_NAME=$(KIND_CLUSTER_NAME) KIND_CONFIG=$(KIND_CONFIG) \
		KIND_NODE_IMAGE=$(KIND_NODE_IMAGE) kind/up.sh

kind-down: $(BIN)/kind
	$(BIN)/kind delete cluster --name $(KIND_CLUSTER_NAME)

## kind-e2e: the whole stack from deploy/overlays/kind*, with this build's
## images (make images, loaded by kind-up), on the kind cluster of kind-up
## (kind/cluster.yaml: two regions, KEP-5030's node cases), then every spec of
## the e2e suite in three runs (main, capability-off, gate-off) and one merged
## JUnit (kind/e2e.sh); JUnit, logs, CSINodes and losetup -a per node in
## _output/kind-e2e/. The cluster stays up for a look (KIND_E2E_DOWN=1 deletes
## it). Upstream components in zonepath's place (kind/stack.sh):
## make kind-e2e PROVISIONER_IMAGE=registry.k8s.io/sig-storage/csi-provisioner:v6.3.0 KIND_E2E_COMPONENTS=upstream-provisioner
kind-e2e: build components images kind-up
	VERSION=$(VERSION) KIND_CLUSTER_NAME=$(KIND_CLUSTER_NAME) kind/e2e.sh

## kind-upstream: Kubernetes' own external-storage suites against zonepath on
## the kind cluster of kind-up, driver file e2e/testdata/kind/upstream.yaml
## (kind/upstream.sh): in parallel, kubernetes-csi CI's selection with the
## snapshot, group snapshot and VolumeAttributesClass [Feature:] specs; then
## their [Serial] ones; KIND_UPSTREAM_STRESS=1 adds the stress suites,
## KIND_UPSTREAM_RUNS picks runs. A table suite → passed/failed/skipped in
## _output/kind-upstream/summary.txt; fails on any failure.
kind-upstream: build components images kind-up $(BIN)/ginkgo
	VERSION=$(VERSION) KIND_CLUSTER_NAME=$(KIND_CLUSTER_NAME) kind/upstream.sh

# The Ginkgo CLI of the ginkgo/v2 module pinned in go.mod, which runs the
# precompiled e2e suite in parallel processes.
$(BIN)/ginkgo: go.mod go.sum
	$(GO) build -o $@ github.com/onsi/ginkgo/v2/ginkgo

# kind v0.33.0, pinned in go.mod by hack/tools.go.
$(BIN)/kind: go.mod go.sum
	$(GO) build -o $@ sigs.k8s.io/kind
