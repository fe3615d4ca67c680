package plugin_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// zoneCapacity is GetCapacity's answer for zone z.
func (c *client) zoneCapacity(z string) *csi.GetCapacityResponse {
	c.t.Helper()
	resp, err := c.GetCapacity(context.Background(), &csi.GetCapacityRequest{AccessibleTopology: zone(z),
		VolumeCapabilities: []*csi.VolumeCapability{drivertest.MountCapability()}})
	if err != nil {
		c.t.Fatalf("GetCapacity of %s: %v", z, err)
	}
	return resp
}

// TestGetCapacityOfDownZone: a zone that is down provisions nothing
// (CreateVolume there is RESOURCE_EXHAUSTED, outage.go), so GetCapacity
// reports none: available_capacity is "The available capacity ... that
// can be used to provision volumes", maximum_volume_size "The largest
// size that may be used in a CreateVolumeRequest.capacity_range.
// required_bytes field" (GetCapacityResponse). Otherwise a CO publishing
// CSIStorageCapacity keeps scheduling claims into the zone. The other
// zones keep their capacity, and the zone's comes back with it.
func TestGetCapacityOfDownZone(t *testing.T) {
	c, d := outageClient(t)
	before := c.zoneCapacity("zone-b")
	if before.GetAvailableCapacity() == 0 {
		t.Fatalf("zone-b reports no capacity before the outage: %v", before)
	}
	d.SetFaults(t, zoneB)
	if got := c.zoneCapacity("zone-b"); got.GetAvailableCapacity() != 0 || got.GetMaximumVolumeSize() != nil {
		t.Errorf("GetCapacity of zone-b while it is down = %v, want available_capacity 0 and no maximum_volume_size", got)
	}
	if got := c.zoneCapacity("zone-a"); got.GetAvailableCapacity() != before.GetAvailableCapacity() {
		t.Errorf("GetCapacity of zone-a while zone-b is down = %v, want %d as zone-b had", got, before.GetAvailableCapacity())
	}
	d.SetFaults(t, drivertest.NoRules)
	if got := c.zoneCapacity("zone-b"); got.GetAvailableCapacity() != before.GetAvailableCapacity() {
		t.Errorf("GetCapacity of zone-b after the outage = %v, want %d again", got, before.GetAvailableCapacity())
	}
}

// TestOutageCloneAndRestoreReadNothing: nothing in a zone that is down is
// read (outage.go). A clone of a volume there is UNAVAILABLE, and a
// restore of a snapshot whose only copy is there RESOURCE_EXHAUSTED
// (spec.md CreateVolume Errors, "Unable to provision in
// accessible_topology"), both decided before any data is copied. The test
// removes the snapshot's archive and the volume's data first, so a driver
// that read them would fail another way (INTERNAL) or copy nothing into a
// volume it then refuses to place.
func TestOutageCloneAndRestoreReadNothing(t *testing.T) {
	c, d := outageClient(t)
	volB := c.volumeIn("in-b", "zone-b")
	zonal := c.mustCreateSnapshot("zonal", volB, nil).GetSnapshotId()
	data := filepath.Join(d.Config.StateDir, "data")
	d.SetFaults(t, zoneB)
	for _, p := range []string{filepath.Join(data, "snapshots", zonal+".tar"), filepath.Join(data, "volumes", volB)} {
		hide(t, p)
	}

	_, err := c.restore("from-zonal", zonal, nil)
	wantCode(t, "restore of a snapshot whose only copy is in zone-b", err, codes.ResourceExhausted, "zone-b")
	clone := drivertest.VolumeRequest("clone-of-b", mib, nil)
	clone.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: volB}}}
	_, err = c.CreateVolume(context.Background(), clone)
	wantCode(t, "clone of the volume in zone-b", err, codes.Unavailable, "zone-b")
}

// hide moves path aside until the test ends.
func hide(t *testing.T, path string) {
	t.Helper()
	aside := path + ".hidden"
	if err := os.Rename(path, aside); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(aside, path) })
}

// TestOutageModifyChangesNothing: nothing in a zone that is down changes
// (outage.go), so ControllerModifyVolume there is UNAVAILABLE, as
// ControllerExpandVolume is, and so is a CreateVolume retried with new
// mutable_parameters for a volume there; "The SP MUST NOT have applied any
// modification to the volume as part of this specific call"
// (ControllerModifyVolume Errors). Back up, both succeed.
func TestOutageModifyChangesNothing(t *testing.T) {
	c, d := outageClient(t)
	volB := c.volumeIn("in-b", "zone-b")
	d.SetFaults(t, zoneB)
	wantCode(t, "ControllerModifyVolume in zone-b", c.modify(volB, tier(plugin.TierPremium)), codes.Unavailable, "zone-b")
	retry := drivertest.VolumeRequest("in-b", mib, drivertest.Requisite(zone("zone-b")))
	retry.MutableParameters = tier(plugin.TierExtreme)
	_, err := c.CreateVolume(context.Background(), retry)
	wantCode(t, "CreateVolume retried with new mutable_parameters in zone-b", err, codes.Unavailable, "zone-b")
	if got := c.currentTier(volB); got != plugin.TierStandard {
		t.Fatalf("volume in zone-b is tier %q after refused modifications while down, want %s", got, plugin.TierStandard)
	}
	// Asking for what the volume already is changes nothing: OK.
	if _, err := c.CreateVolume(context.Background(), drivertest.VolumeRequest("in-b", mib, drivertest.Requisite(zone("zone-b")))); err != nil {
		t.Errorf("CreateVolume retried unchanged in zone-b: %v, want OK", err)
	}

	d.SetFaults(t, drivertest.NoRules)
	if err := c.modify(volB, tier(plugin.TierPremium)); err != nil {
		t.Fatalf("ControllerModifyVolume after the outage: %v", err)
	}
	if _, err := c.CreateVolume(context.Background(), retry); err != nil {
		t.Fatalf("CreateVolume retried with new mutable_parameters after the outage: %v", err)
	}
	if got := c.currentTier(volB); got != plugin.TierExtreme {
		t.Fatalf("volume in zone-b is tier %q, want %s", got, plugin.TierExtreme)
	}
}
