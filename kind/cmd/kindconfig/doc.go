// Command kindconfig writes the kind cluster config that kind/up.sh
// creates a cluster from: the committed one (kind/cluster.yaml) with
// absolute extraMounts paths and only the host workarounds that were
// detected. Keeping the workarounds out of the committed files means a
// cluster on a normal host is exactly what kind/ says.
//
// Usage: kindconfig --in kind/cluster.yaml --out _output/kind/cluster.yaml [--base DIR] [workaround flags]
//
// It must not change kind/cluster.yaml itself.
package main
