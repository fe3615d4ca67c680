//go:build tools

// Package hack pins the modules this repository builds binaries from but
// does not import in regular builds, so that go.mod and go.sum hold them
// and `go build <pkg>` works offline from the module cache.
package hack

import (
	// csi-sanity: the upstream conformance command, run against bin/zonepath.
	_ "github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity"
	// The e2e framework the e2e suite is built on; pinning it keeps
	// k8s.io/kubernetes v1.37.1 and its staging replaces in the module graph.
	_ "k8s.io/kubernetes/test/e2e/framework"
)
