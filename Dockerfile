# syntax=docker/dockerfile:1
# zonepath's images for users with Docker (BuildKit), one target per binary:
#   docker build --target zonepath             -t localhost/zonepath/zonepath:dev .
#   docker build --target zonepath-provisioner -t localhost/zonepath/zonepath-provisioner:dev .
#   (also zonepath-snapshotter, zonepath-scheduler, zonepath-resizer)
# Binaries here are static (CGO_ENABLED=0). `make images` builds the same five
# images, and offline stand-ins for the upstream ones, without a Docker daemon
# (hack/cmd/imagebuild/README.md). Every image `make images` builds from this
# repository must have a target here and no other (TestDockerfileTargets);
# stages named build, build-* and base-* are steps, not images.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .

FROM build AS build-zonepath
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	go build -ldflags "-X main.version=${VERSION}" -o /out/zonepath ./driver/cmd/zonepath

FROM build AS build-zonepath-provisioner
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	go build -ldflags "-X main.version=${VERSION}" -o /out/zonepath-provisioner ./controllers/cmd/zonepath-provisioner

FROM build AS build-zonepath-snapshotter
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	go build -ldflags "-X main.version=${VERSION}" -o /out/zonepath-snapshotter ./controllers/cmd/zonepath-snapshotter

FROM build AS build-zonepath-resizer
ARG VERSION=devel
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	go build -ldflags "-X main.version=${VERSION}" -o /out/zonepath-resizer ./controllers/cmd/zonepath-resizer

# Stamped with the Kubernetes version it is built from, as the Makefile does.
FROM build AS build-zonepath-scheduler
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	v=$(go list -m -f '{{.Version}}' k8s.io/kubernetes) && major=${v#v} && major=${major%%.*} && \
	minor=${v#v*.} && minor=${minor%%.*} && flags="" && \
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do \
		flags="$flags -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"; \
	done && \
	go build -ldflags "$flags" -o /out/zonepath-scheduler ./controllers/cmd/zonepath-scheduler

# Every zonepath image carries these labels; each target below adds its title.
# The node plugin bind-mounts with mount(8) (k8s.io/mount-utils), so it gets
# a Debian base with util-linux and runs as root; the controllers are static
# and run as nonroot on distroless.
FROM debian:bookworm-slim AS base-debian
ARG VERSION=devel
LABEL org.opencontainers.image.version=${VERSION} org.opencontainers.image.source=https://github.com/zonepath/zonepath

FROM gcr.io/distroless/static-debian12:nonroot AS base-static
ARG VERSION=devel
LABEL org.opencontainers.image.version=${VERSION} org.opencontainers.image.source=https://github.com/zonepath/zonepath

FROM base-debian AS zonepath
LABEL org.opencontainers.image.title=zonepath
COPY --from=build-zonepath /out/zonepath /usr/local/bin/zonepath
ENTRYPOINT ["/usr/local/bin/zonepath"]

FROM base-static AS zonepath-provisioner
LABEL org.opencontainers.image.title=zonepath-provisioner
COPY --from=build-zonepath-provisioner /out/zonepath-provisioner /usr/local/bin/zonepath-provisioner
ENTRYPOINT ["/usr/local/bin/zonepath-provisioner"]

FROM base-static AS zonepath-snapshotter
LABEL org.opencontainers.image.title=zonepath-snapshotter
COPY --from=build-zonepath-snapshotter /out/zonepath-snapshotter /usr/local/bin/zonepath-snapshotter
ENTRYPOINT ["/usr/local/bin/zonepath-snapshotter"]

FROM base-static AS zonepath-resizer
LABEL org.opencontainers.image.title=zonepath-resizer
COPY --from=build-zonepath-resizer /out/zonepath-resizer /usr/local/bin/zonepath-resizer
ENTRYPOINT ["/usr/local/bin/zonepath-resizer"]

FROM base-static AS zonepath-scheduler
LABEL org.opencontainers.image.title=zonepath-scheduler
COPY --from=build-zonepath-scheduler /out/zonepath-scheduler /usr/local/bin/zonepath-scheduler
ENTRYPOINT ["/usr/local/bin/zonepath-scheduler"]
