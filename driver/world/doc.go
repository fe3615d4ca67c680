// Package world models the fake world the zonepath driver lives in:
// regions made of zones (optionally split into racks), each zone with a
// storage capacity and a snapshot quota. It parses the topology file,
// validates CSI topology segments against it and turns CSI
// TopologyRequirements into an ordered list of candidate zones; the choice
// among them (room, quota, content sources, outages) is the plugin's.
//
// A segment is a set of key/value pairs; it selects every zone whose
// region, zone and rack agree with the pairs it has. A segment that names
// only a region therefore selects all zones of that region, which is how a
// snapshot "usable from the whole region" is expressed.
//
// It is the driver's model only: it must not import the plugin, its state
// or client-go (controllers/topology is the Kubernetes-side counterpart);
// a Topology never changes after Parse, so it needs no lock.
package world
