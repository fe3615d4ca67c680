//go:build tools

// Package hack pins the modules this repository builds binaries from but
// does not import in regular builds, so that go.mod and go.sum hold them
// and `go build <pkg>` works offline from the module cache.
package hack

import (
	// csi-sanity: the upstream conformance command, run against bin/zonepath.
	_ "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity"
	// actionlint lints .github/workflows (and the composite action's steps,
	// see hack/cmd/actioncheck) in `make test`.
	_ "github.com/rhysd/actionlint/cmd/actionlint"
	// The e2e framework the e2e suite is built on; pinning it keeps
	// k8s.io/kubernetes v1.37.1 and its staging replaces in the module graph.
	_ "k8s.io/kubernetes/test/e2e/framework"

	// The fake-zones cluster (`make components`): the control plane from the
	// same k8s.io/kubernetes the e2e framework pins, kwok for the fake nodes,
	// and the upstream CSI sidecars. They build against this module's one
	// graph (k8s staging at v0.37.1, CSI spec v1.13.0), so the cluster runs
	// the exact Kubernetes the tests compile against. Two cannot join them
	// and have modules of their own, which say why: etcd
	// (hack/components/etcd) and csi-provisioner
	// (hack/components/csi-provisioner).
	_ "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/csi-snapshotter"
	_ "github.com/kubernetes-csi/external-snapshotter/v8/cmd/snapshot-controller"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	// kubectl, so a fake-zones user can look at the cluster.
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "sigs.k8s.io/kwok/cmd/kwok"

	// The offline kind node image's node binaries (kind/node-image.sh),
	// and kind itself for make kind-up (bin/kind).
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubelet"
	// The Ginkgo CLI, which runs the e2e suite in parallel processes
	// (make kind-upstream).
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "sigs.k8s.io/kind"

	// agnhost, the e2e framework's test image binary, from the same
	// k8s.io/kubernetes: make images builds its offline stand-in
	// (hack/cmd/imagebuild) for the storage suites' hostexec and subPath pods.
	_ "k8s.io/kubernetes/test/images/agnhost"

	// The snapshot CRDs snapshot-controller needs ship in this module's
	// client/config/crd; require it explicitly so its version is ours, not
	// whatever the sidecars happen to need.
	_ "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
)
