package plugin_test

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// capacityWorld gives its zones different room: zone-a 3Gi, zone-b 1Gi,
// zone-c none, zone-d unlimited.
const capacityWorld = `regions:
- name: region-1
  zones: [{name: zone-a, capacity: 3Gi}, {name: zone-b, capacity: 1Gi}, {name: zone-c, capacity: "0"}]
- name: region-2
  zones: [{name: zone-d}]
`

// TestGetCapacityAgreesWithCreateVolume: what GetCapacity reports for one
// zone is what CreateVolume in that zone takes. kube-scheduler's
// VolumeBinding plugin compares a claim's size with a CSIStorageCapacity's
// maximumVolumeSize, or its capacity when that is unset, so that limit
// must fit and one byte more must be refused. The spec, GetCapacity:
// maximum_volume_size "is the largest size that may be used in a
// CreateVolumeRequest.capacity_range.required_bytes field to create a
// volume with the same parameters as those in GetCapacityRequest", and
// available_capacity is "the available capacity ... that can be used to
// provision volumes". A refusal is RESOURCE_EXHAUSTED while the zone may
// free up (CreateVolume Errors, "Unable to provision in
// accessible_topology"), OUT_OF_RANGE beyond the largest volume the
// driver makes at all ("Unsupported capacity_range"). Each zone is
// checked before and after a volume takes part of it.
func TestGetCapacityAgreesWithCreateVolume(t *testing.T) {
	cases := []struct {
		name    string
		maxSize int64 // --max-volume-size
		zones   []string
	}{
		{name: "zones of different room", zones: []string{"zone-a", "zone-b", "zone-c", "zone-d"}},
		{name: "max-volume-size below a zone's room", maxSize: 2 * gib, zones: []string{"zone-a", "zone-d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := drivertest.Start(t, drivertest.Options{World: capacityWorld, Config: func(c *plugin.Config) { c.MaxVolumeSize = tc.maxSize }})
			c := newCSIClient(t, d)
			for _, z := range tc.zones {
				limit := checkZoneLimit(t, c, z, "empty")
				if limit >= gib/2 {
					c.mustCreateVolume(drivertest.VolumeRequest(z+"-half", gib/2, &csi.TopologyRequirement{Requisite: zones(z)}))
					checkZoneLimit(t, c, z, "after a 512Mi volume")
				}
			}
		})
	}
}

// checkZoneLimit reads zone z's limit from GetCapacity, then creates a
// volume one byte larger (refused, nothing made) and one of the limit
// (made, then deleted); it returns the limit.
func checkZoneLimit(t *testing.T, c *client, z, when string) int64 {
	t.Helper()
	ctx := context.Background()
	resp, err := c.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: zone(z),
		VolumeCapabilities: []*csi.VolumeCapability{drivertest.MountCapability()}})
	if err != nil {
		t.Fatalf("%s %s: GetCapacity: %v", z, when, err)
	}
	limit := resp.GetAvailableCapacity()
	if m := resp.GetMaximumVolumeSize(); m != nil {
		if m.GetValue() > limit {
			t.Fatalf("%s %s: maximum_volume_size %d exceeds available_capacity %d", z, when, m.GetValue(), limit)
		}
		limit = m.GetValue()
	}
	req := &csi.TopologyRequirement{Requisite: zones(z)}
	_, err = c.CreateVolume(ctx, drivertest.VolumeRequest(z+"-over", limit+1, req))
	if code := codeOf(err); code != codes.ResourceExhausted && code != codes.OutOfRange {
		t.Fatalf("%s %s: GetCapacity's limit is %d, CreateVolume of %d bytes: %v, want RESOURCE_EXHAUSTED or OUT_OF_RANGE", z, when, limit, limit+1, err)
	}
	if limit == 0 {
		return 0
	}
	v := c.mustCreateVolume(drivertest.VolumeRequest(z+"-fits", limit, req))
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.GetVolumeId()}); err != nil {
		t.Fatalf("%s %s: DeleteVolume: %v", z, when, err)
	}
	return limit
}

// TestExpandWaitsForRoom: an expansion its zone has no room for now is
// RESOURCE_EXHAUSTED, not OUT_OF_RANGE, and succeeds once room is freed.
// OUT_OF_RANGE is ControllerExpandVolume's "Unsupported capacity_range ...
// not allowed by the Plugin", "Caller MUST fix the capacity range before
// retrying", which the external-resizer takes as final; a full zone is
// temporary (volumes.go, noRoomToGrow, says why RESOURCE_EXHAUSTED). A size
// above the largest volume stays OUT_OF_RANGE (TestMaxVolumeSizeFlag).
func TestExpandWaitsForRoom(t *testing.T) {
	d := drivertest.Start(t, drivertest.Options{World: capacityWorld})
	c := newCSIClient(t, d)
	ctx := context.Background()
	inB := &csi.TopologyRequirement{Requisite: zones("zone-b")} // 1Gi
	grow := c.mustCreateVolume(drivertest.VolumeRequest("grow", gib/2, inB)).GetVolumeId()
	other := c.mustCreateVolume(drivertest.VolumeRequest("other", gib/4, inB)).GetVolumeId()
	expand := func() error {
		_, err := c.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: grow, CapacityRange: &csi.CapacityRange{RequiredBytes: gib}})
		return err
	}
	if err := expand(); codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("expanding to 1Gi in zone-b with 256Mi free: %v, want ResourceExhausted (retried until room is freed)", err)
	}
	if _, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: other}); err != nil {
		t.Fatal(err)
	}
	if err := expand(); err != nil {
		t.Fatalf("the same expansion after room was freed: %v, want OK", err)
	}
}
