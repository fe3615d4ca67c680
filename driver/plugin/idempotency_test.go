package plugin_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
	"github.com/zonepath/zonepath/driver/world"
	"github.com/zonepath/zonepath/internal/idempotency"
)

// idemPlace maps the table's places onto testWorld: A and B zones of
// region-1, C the zone of region-2 (outside a region-wide snapshot of
// region-1), X a misspelt zone of region-1.
func idemPlace(x idempotency.Place) *csi.Topology {
	switch x {
	case idempotency.A:
		return zone("zone-a")
	case idempotency.B:
		return zone("zone-b")
	case idempotency.C:
		return zone("zone-d")
	}
	return zone("zone-x")
}

// wideVariant is one way zonepath makes a snapshot usable from A and B,
// and the accessible_topology it then reports.
type wideVariant struct {
	name   string
	params map[string]string
	topo   []*csi.Topology
}

var wideVariants = []wideVariant{
	{"snapshotCopies=2", map[string]string{plugin.ParamSnapshotCopies: "2"}, zones("zone-a", "zone-b")},
	// A requisite covering part of region-1: the copy goes to zone-a and
	// the snapshot is usable from the whole region.
	{"snapshotScope=region", map[string]string{plugin.ParamSnapshotScope: "region"}, []*csi.Topology{region("region-1")}},
}

// created is what a create call answered.
type created struct {
	id   string
	topo []*csi.Topology
}

// idemMutable is what a NewMutable case's repeated request carries.
var idemMutable = map[string]string{plugin.ParamIOPSTier: plugin.TierPremium}

// idemCreate makes the case's call with requirement req; repeat is true
// for the case's request (not the first of a reused name).
func (c *client) idemCreate(k idempotency.Case, name, source string, params map[string]string, req *csi.TopologyRequirement, repeat bool) (created, error) {
	ctx := context.Background()
	if k.RPC == idempotency.CreateVolume {
		vr := drivertest.VolumeRequest(name, gib, req)
		if k.NewMutable && repeat {
			vr.MutableParameters = idemMutable
		}
		resp, err := c.CreateVolume(ctx, vr)
		return created{resp.GetVolume().GetVolumeId(), resp.GetVolume().GetAccessibleTopology()}, err
	}
	resp, err := c.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: source, Parameters: params, AccessibilityRequirements: req})
	return created{resp.GetSnapshot().GetSnapshotId(), resp.GetSnapshot().GetAccessibleTopology()}, err
}

// TestIdempotencyTable runs every case of internal/idempotency, the table
// zonepath-sanity runs too (sanity: TestIdempotencyTable), against the
// driver: the object the first request makes, then the request of the
// case, whose answer must be the case's Want, for the reason its Clause
// quotes from the spec. Wide cases run once per way zonepath makes a
// snapshot usable from two places.
func TestIdempotencyTable(t *testing.T) {
	c := newClient(t, "")
	src := c.mustCreateVolume(drivertest.VolumeRequest("idem-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")}))
	for _, k := range idempotency.Cases {
		variants := []wideVariant{{}}
		if k.Wide {
			variants = wideVariants
		}
		for _, v := range variants {
			name := strings.TrimSuffix(k.ID+"/"+v.name, "/")
			t.Run(name, func(t *testing.T) {
				t.Logf("%s; %s: want %v (%s)", k.Object(), k.Request(), k.Want, k.Clause)
				runIdemCase(t, c, k, v, strings.NewReplacer("/", "-", "=", "-").Replace(name), src.GetVolumeId())
			})
		}
	}
}

func runIdemCase(t *testing.T, c *client, k idempotency.Case, v wideVariant, name, source string) {
	t.Helper()
	var params map[string]string
	if k.Wide {
		params = v.params
	}
	var first created
	if k.Repeated() {
		var err error
		if first, err = c.idemCreate(k, name, source, params, k.FirstRequirement(idemPlace), false); err != nil {
			t.Fatalf("first request, requisite %s: %v", world.FormatSegments(k.FirstRequirement(idemPlace).GetRequisite()), err)
		}
		if want := existingTopology(k, v); !sameTopology(first.topo, want) {
			t.Fatalf("the first request made an object usable from %s, not %s as the case needs", world.FormatSegments(first.topo), world.FormatSegments(want))
		}
	}
	got, err := c.idemCreate(k, name, source, params, k.Requirement(idemPlace), true)
	if codeOf(err) != k.Want {
		t.Fatalf("%s with %s: %v, want %v (%s)", k.Object(), k.Request(), err, k.Want, k.Clause)
	}
	switch {
	case err != nil && k.Uses(idempotency.X) && !strings.Contains(err.Error(), world.FormatSegment(idemPlace(idempotency.X).GetSegments())):
		t.Fatalf("%v: the message must name the unknown segment %s", err, world.FormatSegment(idemPlace(idempotency.X).GetSegments()))
	case err != nil:
	case k.Repeated() && (got.id != first.id || !sameTopology(got.topo, first.topo)):
		t.Fatalf("got %s usable from %s, want the existing %s usable from %s", got.id, world.FormatSegments(got.topo), first.id, world.FormatSegments(first.topo))
	case !k.Repeated() && !sameTopology(got.topo, zones("zone-a")):
		t.Fatalf("new object usable from %s, want A (zone-a), the requisite's only place", world.FormatSegments(got.topo))
	}
}

// existingTopology is what the first request of case k reports.
func existingTopology(k idempotency.Case, v wideVariant) []*csi.Topology {
	if k.Wide {
		return v.topo
	}
	return zones("zone-a")
}

// TestIdempotencyTableConcurrent sends a case's first request and its
// request at once, so that both may pass the name lookup and meet in the
// store update, where newRecord applies the same checks to whichever
// committed first. Only cases whose answer is OK in either order take
// part (preferred elsewhere would place the object elsewhere if it won).
func TestIdempotencyTableConcurrent(t *testing.T) {
	v := wideVariants[0]
	c := newClient(t, "")
	src := c.mustCreateVolume(drivertest.VolumeRequest("idem-source", gib, &csi.TopologyRequirement{Requisite: zones("zone-a")}))
	for _, k := range idempotency.Cases {
		if !k.Repeated() || k.Want != codes.OK || k.Preferred != nil || k.Uses(idempotency.X) {
			continue
		}
		params := map[string]string(nil)
		if k.Wide {
			params = v.params
		}
		for round := range 4 {
			name := fmt.Sprintf("%s-race-%d", strings.ReplaceAll(k.ID, "/", "-"), round)
			var wg sync.WaitGroup
			var got [2]created
			var errs [2]error
			for i, req := range []*csi.TopologyRequirement{k.FirstRequirement(idemPlace), k.Requirement(idemPlace)} {
				wg.Go(func() { got[i], errs[i] = c.idemCreate(k, name, src.GetVolumeId(), params, req, i == 1) })
			}
			wg.Wait()
			if errs[0] != nil || errs[1] != nil || got[0].id != got[1].id {
				t.Fatalf("%s round %d, concurrent first request and %s: %v / %v, IDs %q and %q; want one object, OK to both (%s)",
					k.ID, round, k.Request(), errs[0], errs[1], got[0].id, got[1].id, k.Clause)
			}
		}
	}
}
