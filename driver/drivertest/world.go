package drivertest

import "fmt"

// World is the topology file of the world the driver's tests share: zones
// zone-a, zone-b and zone-c in region-1 and zone-d in region-2, under the
// default topology keys. zoneC adds fields to zone-c, in YAML flow form,
// so that a test can make it run out (say "capacity: 2Gi, snapshotQuota: 1");
// "" leaves it unlimited.
func World(zoneC string) string {
	if zoneC != "" {
		zoneC = ", " + zoneC
	}
	return fmt.Sprintf(`regions:
- name: region-1
  zones: [{name: zone-a}, {name: zone-b}, {name: zone-c%s}]
- name: region-2
  zones: [{name: zone-d}]
`, zoneC)
}
