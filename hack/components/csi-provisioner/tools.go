//go:build tools

// Package provisioner pins csi-provisioner for `make components`; see
// go.mod for why it is a module of its own.
package provisioner

import (
	_ "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"
)
