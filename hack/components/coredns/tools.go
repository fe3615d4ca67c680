//go:build tools

// Package coredns pins CoreDNS for the offline kind node image's
// registry.k8s.io/coredns/coredns image; see go.mod for why it is a module
// of its own.
package coredns

import (
	// CoreDNS's module root is the coredns command (package main).
	_ "github.com/coredns/coredns"
)
