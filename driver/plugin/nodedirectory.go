package plugin

import (
	"github.com/zonepath/zonepath/driver/world"
)

// nodeDirectory answers where a node is and how many volumes it takes:
// the controller learns nodes from the topology file, and the node
// plugin sharing its process is always known.
type nodeDirectory struct{ p *Plugin }

func newNodeDirectory(p *Plugin) *nodeDirectory { return &nodeDirectory{p: p} }

func (d *nodeDirectory) lookup(id string) (world.NodeInfo, bool) {
	cfg := d.p.cfg
	if cfg.ServeNode && id == cfg.NodeID {
		info := world.NodeInfo{ID: id, Zone: cfg.Node.Zone, Rack: cfg.Node.Rack, MaxVolumesPerNode: d.p.topo.DefaultMaxVolumesPerNode()}
		if n, ok := d.p.topo.Node(id); ok {
			info.MaxVolumesPerNode, info.PublishLimit = n.MaxVolumesPerNode, n.PublishLimit
		}
		return d.withOverride(info), true
	}
	n, ok := d.p.topo.Node(id)
	return d.withOverride(n), ok
}

func (d *nodeDirectory) withOverride(n world.NodeInfo) world.NodeInfo {
	if d.p.cfg.MaxVolumesPerNode > 0 {
		n.MaxVolumesPerNode = d.p.cfg.MaxVolumesPerNode
	}
	return n
}
