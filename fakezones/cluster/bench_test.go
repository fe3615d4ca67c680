//go:build livecluster

package cluster_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zonepath/zonepath/fakezones/clustertest"
	"github.com/zonepath/zonepath/fakezones/spec"
)

// BenchmarkUp brings up the clusters of issue 14 and reports how long up
// took to ready (s/up) and the peak resident memory of the cluster's
// processes (MiB, MiB/node); up's timing lines and the load average are
// in the log. The target, ready in 15 s on 2 cores, is for 1,020 nodes;
// 5,010 nodes (3 regions of 10 zones, as the scheduler benchmarks use)
// must work. Each run is one cluster, stopped before the next starts
// (make bench-fakezones: -benchtime=1x).
func BenchmarkUp(b *testing.B) {
	for _, bc := range []struct {
		name   string
		file   spec.File
		target time.Duration
	}{
		{name: "1020nodes", file: spec.File{Zones: 30, NodesPerZone: 34}, target: 15 * time.Second},
		{name: "5010nodes", file: spec.File{Regions: 3, Zones: 30, NodesPerZone: 167}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.Logf("load average before: %s", loadAverage())
			c := clustertest.Start(b, bc.file, "")
			nodes := bc.file.Zones * bc.file.NodesPerZone
			mem := c.PeakMemory()
			b.ReportMetric(c.ReadyIn.Seconds(), "s/up")
			b.ReportMetric(float64(mem.Total)/(1<<20), "MiB")
			b.ReportMetric(float64(mem.Total)/(1<<20)/float64(nodes), "MiB/node")
			b.Logf("%d nodes ready in %.2fs; %s; load average after: %s", nodes, c.ReadyIn.Seconds(), mem.String(nodes), loadAverage())
			if bc.target > 0 && c.ReadyIn > bc.target {
				b.Errorf("ready in %.2fs, over the %v target", c.ReadyIn.Seconds(), bc.target)
			}
		})
	}
}

// loadAverage is the 1, 5 and 15 minute load: the machine is shared, and
// a figure without it says little.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
