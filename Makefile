# One make vocabulary for people and CI. Every binary lands in bin/.
GO         ?= go
BIN        := $(CURDIR)/bin
OUT        := $(CURDIR)/_output
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS    := -X main.version=$(VERSION)
# Fuzz targets run for a bounded time in `make test`.
FUZZTIME   ?= 10s

.PHONY: all build test unit fuzz sanity bench conformance components clean

all: build

build: $(BIN)/zonepath $(BIN)/zonepath-sanity $(BIN)/csi-sanity $(BIN)/zonepath-scheduler

$(BIN)/zonepath: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./driver/cmd/zonepath

$(BIN)/zonepath-sanity: FORCE
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./sanity/cmd/zonepath-sanity

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

FORCE:

## test: unit tests and the in-process csi-sanity suite with the race detector, then bounded fuzzing.
test: unit fuzz

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

fuzz:
	hack/fuzz.sh $(FUZZTIME)

## sanity: upstream csi-sanity, then zonepath-sanity (upstream suite plus the
## extensions), then zonepath-sanity against the driver without snapshot topology.
sanity: build
	hack/sanity.sh

## bench: driver benchmarks at 1k and 10k objects, concurrency 1 and 8, with target ratios.
bench:
	hack/bench.sh

## conformance: the main job. Conformance of the built-in driver in its fake
## zones (today: upstream csi-sanity against bin/zonepath); results under _output/.
conformance: sanity

## components: the fake-zones cluster's binaries into bin/, versions stamped:
## etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok,
## snapshot-controller, csi-snapshotter, csi-attacher, csi-provisioner, from the
## modules pinned in go.mod (hack/tools.go) and hack/components/*/go.mod.
## One at a time (2 cores); go's build cache makes an unchanged rebuild take
## seconds. A subset: make components COMPONENTS="etcd kwok".
COMPONENTS ?=
components:
	GO=$(GO) BIN=$(BIN) hack/components.sh $(COMPONENTS)

clean:
	rm -rf $(BIN) $(OUT)
