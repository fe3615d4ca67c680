// Package plugin implements the zonepath CSI plugin: the Identity,
// Controller and Node services over one gRPC server. Placement and
// validation of topology live in package world, durable state in
// package state, fault injection in package faults, copies of volume data
// (which the tenant owns and may change meanwhile) in package datapath,
// the loop devices that place block volumes on the node in package
// loopdev; this package turns CSI requests into those calls and their
// results into CSI responses.
//
// It must not keep state of its own beyond caches that state can rebuild
// (every record goes through package state), nor import client-go or the
// Kubernetes API types: the driver speaks CSI only, and a CO's objects are
// not its business.
package plugin
