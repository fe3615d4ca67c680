# One make vocabulary for people and CI. Every binary lands in bin/.
GO         ?= go
BIN        := $(CURDIR)/bin
OUT        := $(CURDIR)/_output
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS    := -X main.version=$(VERSION)
# Fuzz targets run for a bounded time in `make test`.
FUZZTIME   ?= 10s

.PHONY: all build crds test unit fuzz sanity bench conformance e2e-mutants components clean \
	fakezones-up fakezones-down fakezones-test

all: build

build: $(BIN)/zonepath $(BIN)/zonepath-sanity $(BIN)/csi-sanity $(BIN)/zonepath-cluster \
	$(BIN)/zonepath-provisioner $(BIN)/zonepath-snapshotter \
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
	$(GO) test -c -o $@ ./e2e

# csi-provisioner v6.3.0's library with KEP-5943's snapshot topology for Immediate binding.
$(BIN)/zonepath-provisioner: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./controllers/cmd/zonepath-provisioner

# The snapshotter sidecar: upstream's sidecar controller with KEP-5943 topology.
$(BIN)/zonepath-snapshotter: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./controllers/cmd/zonepath-snapshotter

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
	$(GO) build -ldflags "$(K8S_LDFLAGS)" -o $@ ./controllers/cmd/zonepath-scheduler

# The upstream csi-sanity command, built from the csi-test module pinned in go.mod.
$(BIN)/csi-sanity: go.mod go.sum
	$(GO) build -o $@ github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity

## crds: the six external-snapshotter CRDs of the client/v8 module pinned in
## go.mod, with the KEP-5943 fields added, into bin/crds/ (nothing upstream is
## committed here).
crds: $(BIN)/zonepath-crds
	$(BIN)/zonepath-crds --out $(BIN)/crds \
		--from $$($(GO) list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)/config/crd

$(BIN)/zonepath-crds: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./controllers/cmd/zonepath-crds

FORCE:

## test: unit tests and the in-process csi-sanity suite with the race detector, then bounded fuzzing.
test: unit fuzz

unit:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

fuzz:
	hack/fuzz.sh $(FUZZTIME)

## sanity: upstream csi-sanity, then zonepath-sanity (upstream suite plus the
## extensions), then zonepath-sanity against the driver without snapshot topology.
sanity: build
	hack/sanity.sh

## bench: driver benchmarks at 1k and 10k objects, concurrency 1 and 8, and the
## scheduler plugin's Filter over 5,000 nodes, with target ratios.
bench:
	hack/bench.sh

## conformance: the main job. Conformance of the built-in driver on its own
## and in a fake-zones cluster (hack/conformance.sh); results under
## _output/conformance/.
conformance: build components
	hack/conformance.sh

## e2e-mutants: proves the e2e suite can fail. Runs it against broken
## fake-zones set-ups, one at a time (e2e/mutants: a driver fault rule, an
## upstream scheduler or provisioner, a cluster file change), prints a table
## mutant → scenarios failed, and fails unless each mutant is caught by the
## scenarios expected to catch it. Output under _output/e2e-mutants/.
## One mutant: make e2e-mutants MUTANTS=upstream-kube-scheduler
MUTANTS ?=
e2e-mutants: build components
	GO=$(GO) BIN=$(BIN) hack/components.sh csi-provisioner
	$(GO) run ./e2e/mutants --bin-dir $(BIN) --output-dir $(OUT)/e2e-mutants --only "$(MUTANTS)"

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
	ZONEPATH_BIN=$(BIN) $(GO) test -tags fakezones -count=1 -v ./fakezones/...

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

clean:
	rm -rf $(BIN) $(OUT)
