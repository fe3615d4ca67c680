// Package fakezones documents the fake-zones cluster: a real Kubernetes
// control plane with kwok nodes spread over regions and zones, the
// snapshot controller, the CSI sidecars and the zonepath driver, all as
// local processes built from Go modules: no Docker, no registry, ready in
// seconds.
//
// Its packages (spec, pki, proc, objects, kubelet, cluster, clustertest,
// chaos) and why they are built as they are: fakezones/README.md. The
// command is cmd/zonepath-cluster; make fakezones-up, make conformance and
// make chaos run it.
package fakezones
