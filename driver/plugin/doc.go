// Package plugin implements the zonepath CSI plugin: the Identity,
// Controller, GroupController and Node services over one gRPC server. It
// turns CSI requests into calls of the driver's other packages and their
// results into CSI responses, and it places objects: which zones a new
// volume or snapshot goes to, and which zones a snapshot is usable from,
// are decided in placement.go. Package world parses the topology file,
// validates segments and orders the candidate zones a TopologyRequirement
// allows; durable state is package state, fault injection package faults,
// copies of volume data (which the tenant owns and may change meanwhile)
// package datapath, the loop devices that place block volumes on the node
// package loopdev.
//
// It must not keep state of its own beyond caches that state can rebuild
// (every record goes through package state), nor import client-go or the
// Kubernetes API types: the driver speaks CSI only, and a CO's objects are
// not its business.
package plugin
