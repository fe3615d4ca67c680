package snapshottopology

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// BenchmarkFilter times Filter over 5,000 nodes spread over 3 regions of
// 10 zones each, for pods restoring 1, 3 and 10 PVCs from snapshots. Each
// snapshot's nodeAffinity is in the shape FromCSI writes, one term per
// {region, zone} segment: all ten zones of r1 plus six (shifted per PVC)
// of r0, so a node in r1 passes every PVC, a node in r0 passes or fails
// depending on the PVCs, and a node in r2 fails the first.
func BenchmarkFilter(b *testing.B) {
	const regions, zonesPerRegion, nodes = 3, 10, 5000
	infos := make([]fwk.NodeInfo, nodes)
	for i := range infos {
		z := i % (regions * zonesPerRegion)
		infos[i] = nodeInfo(fmt.Sprint("n", i), map[string]string{
			regionKey:                fmt.Sprint("r", z/zonesPerRegion),
			zoneKey:                  fmt.Sprintf("r%d-z%d", z/zonesPerRegion, z%zonesPerRegion),
			"kubernetes.io/hostname": fmt.Sprint("n", i),
		})
	}
	for _, pvcs := range []int{1, 3, 10} {
		b.Run(fmt.Sprintf("pvcs=%d", pvcs), func(b *testing.B) {
			cs := framework.NewCycleState()
			cs.Write(stateKey, newState(benchSources(pvcs, zonesPerRegion)))
			pl := &Plugin{enabled: true}
			ctx := context.Background()
			pod := podWith("p")
			passed := 0
			for b.Loop() {
				passed = 0
				for _, ni := range infos {
					if pl.Filter(ctx, cs, pod, ni).IsSuccess() {
						passed++
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
			b.ReportMetric(float64(passed), "passed/op")
		})
	}
}

func benchSources(pvcs, zonesPerRegion int) []source {
	out := make([]source, pvcs)
	for j := range out {
		var terms []any
		for z := range zonesPerRegion {
			terms = append(terms, term(regionKey, []string{"r1"}, zoneKey, []string{fmt.Sprintf("r1-z%d", z)}))
		}
		for k := range 6 {
			terms = append(terms, term(regionKey, []string{"r0"}, zoneKey, []string{fmt.Sprintf("r0-z%d", (j+k)%zonesPerRegion)}))
		}
		out[j] = source{
			claim:    fmt.Sprint("c", j),
			snapshot: types.NamespacedName{Namespace: ns, Name: fmt.Sprint("s", j)},
			content:  fmt.Sprint("k", j),
			terms:    mustTerms(terms...),
		}
	}
	return out
}
