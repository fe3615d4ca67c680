//go:build tools

// Package etcd pins the etcd server for `make components`; see go.mod for
// why it is a module of its own.
package etcd

import (
	// etcd v3.6's server module is itself the etcd command (package main).
	_ "go.etcd.io/etcd/server/v3"
)
