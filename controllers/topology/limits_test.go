package topology

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	drivertopology "github.com/zonepath/zonepath/driver/topology"
)

// TestDriverAcceptsTheLargestRequirement holds the zonepath driver's
// segment limit to this package's: the snapshotter (class
// allowedTopologies) and the provisioner (a StorageClass narrowed by
// Intersect, which external-provisioner expands into requisite) send up
// to MaxSegments segments, so a driver accepting fewer would fail valid
// requests with INVALID_ARGUMENT. The request is the cross product of 32
// regions and 32 zone names, exactly MaxSegments segments, each naming a
// real zone of the driver's world.
func TestDriverAcceptsTheLargestRequirement(t *testing.T) {
	if drivertopology.MaxSegmentsPerRequirement < MaxSegments {
		t.Fatalf("driver/topology.MaxSegmentsPerRequirement = %d, less than controllers/topology.MaxSegments = %d",
			drivertopology.MaxSegmentsPerRequirement, MaxSegments)
	}
	const side = 32 // side*side == MaxSegments
	var regions, zoneNames []string
	world := drivertopology.File{}
	for r := range side {
		region := drivertopology.Region{Name: fmt.Sprint("r", r)}
		for z := range side {
			region.Zones = append(region.Zones, drivertopology.Zone{Name: fmt.Sprint("z", z)})
		}
		world.Regions = append(world.Regions, region)
		regions, zoneNames = append(regions, region.Name), append(zoneNames, fmt.Sprint("z", r))
	}
	driver, err := world.Validate()
	if err != nil {
		t.Fatal(err)
	}
	req, err := Requirement([]v1.TopologySelectorTerm{term(
		expr(drivertopology.DefaultRegionKey, regions...), expr(drivertopology.DefaultZoneKey, zoneNames...))}, "pvc-1")
	if err != nil || len(req.GetRequisite()) != MaxSegments {
		t.Fatalf("Requirement = %d segments, %v; want %d", len(req.GetRequisite()), err, MaxSegments)
	}
	zones, err := driver.Candidates(req)
	if err != nil {
		t.Fatalf("driver refuses a requirement of %d segments: %v", MaxSegments, err)
	}
	if len(zones) != side*side {
		t.Fatalf("driver selected %d zones, want all %d", len(zones), side*side)
	}
}
