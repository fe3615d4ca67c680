package topology

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/zonepath/zonepath/driver/world"
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
	if world.MaxSegmentsPerRequirement < MaxSegments {
		t.Fatalf("driver/world.MaxSegmentsPerRequirement = %d, less than controllers/topology.MaxSegments = %d",
			world.MaxSegmentsPerRequirement, MaxSegments)
	}
	const side = 32 // side*side == MaxSegments
	var regions, zoneNames []string
	file := world.File{}
	for r := range side {
		region := world.Region{Name: fmt.Sprint("r", r)}
		for z := range side {
			region.Zones = append(region.Zones, world.Zone{Name: fmt.Sprint("z", z)})
		}
		file.Regions = append(file.Regions, region)
		regions, zoneNames = append(regions, region.Name), append(zoneNames, fmt.Sprint("z", r))
	}
	driver, err := file.Validate()
	if err != nil {
		t.Fatal(err)
	}
	req, err := Requirement([]v1.TopologySelectorTerm{term(
		expr(world.DefaultRegionKey, regions...), expr(world.DefaultZoneKey, zoneNames...))}, "pvc-1")
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
