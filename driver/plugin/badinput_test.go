package plugin_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/driver/plugin"
)

// testDriver is a driver in testWorld whose state and data directories a
// test can inspect, and which it can restart on the same state.
type testDriver struct {
	*client
	*drivertest.Driver
}

func newTestDriver(t *testing.T, configure func(*plugin.Config)) *testDriver {
	t.Helper()
	d := &testDriver{Driver: drivertest.Start(t, drivertest.Options{World: testWorld, Config: func(c *plugin.Config) {
		c.MaxVolumesPerNode = 3
		if configure != nil {
			configure(c)
		}
	}})}
	d.client = newCSIClient(t, d.Driver)
	return d
}

// restart stops the driver and starts a new one on the same state.
func (d *testDriver) restart(t *testing.T) {
	t.Helper()
	d.Restart(t)
	d.client = newCSIClient(t, d.Driver)
}

func (d *testDriver) dataDir() string { return filepath.Join(d.Config.StateDir, "data") }

// hideData moves a file or directory of d's data directory aside until
// the test ends, so that any read of it fails.
func hideData(t *testing.T, d *drivertest.Driver, path ...string) {
	t.Helper()
	p := filepath.Join(append([]string{d.Config.StateDir, "data"}, path...)...)
	if err := os.Rename(p, p+".hidden"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Rename(p+".hidden", p) })
}

// dataFiles lists volumes/ and snapshots/ of the data directory.
func (d *testDriver) dataFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, sub := range []string{"volumes", "snapshots"} {
		entries, err := os.ReadDir(filepath.Join(d.dataDir(), sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			out = append(out, filepath.Join(sub, e.Name()))
		}
	}
	return out
}

// sizedRequest asks for a volume of the access type with a capacity range.
func sizedRequest(name string, block bool, r *csi.CapacityRange) *csi.CreateVolumeRequest {
	req := drivertest.VolumeRequest(name, 0, nil)
	req.CapacityRange = r
	req.VolumeCapabilities = []*csi.VolumeCapability{drivertest.Capability(block)}
	return req
}

func accessName(block bool) string {
	if block {
		return "block"
	}
	return "mount"
}

type codeCase struct {
	name string
	call func() error
	want codes.Code
}

// errOf is a codeCase call: the error of one RPC with req.
func errOf[Req, Resp any](rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) func() error {
	return func() error {
		_, err := rpc(context.Background(), req)
		return err
	}
}

// assertAbsent fails the test for each path that exists.
func assertAbsent(t *testing.T, why string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s: %s exists (%v)", why, p, err)
		}
	}
}

func runCodeCases(t *testing.T, cases []codeCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); codeOf(err) != tt.want {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
}

// TestControlCharactersAreInvalid: a name, ID, parameter or context with a
// control character (NUL above all) is the caller's mistake, so
// INVALID_ARGUMENT (CSI General Error Table: "Invalid or unsupported field
// in the request"). TestNodeControlCharactersAreInvalid covers paths.
func TestControlCharactersAreInvalid(t *testing.T) {
	d := newTestDriver(t, nil)
	ctx := context.Background()
	vol := d.mustCreateVolume(drivertest.VolumeRequest("ctl-source", gib, nil)).GetVolumeId()
	createVolume := func(mutate func(*csi.CreateVolumeRequest)) func() error {
		req := drivertest.VolumeRequest("ctl-volume", gib, nil)
		mutate(req)
		return errOf(d.CreateVolume, req)
	}
	createSnapshot := func(name string, params map[string]string) func() error {
		return errOf(d.CreateSnapshot, &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: vol, Parameters: params})
	}
	cases := []codeCase{
		{"CreateVolume name with NUL", createVolume(func(r *csi.CreateVolumeRequest) { r.Name = "ctl\x00volume" }), codes.InvalidArgument},
		{"CreateVolume name with newline", createVolume(func(r *csi.CreateVolumeRequest) { r.Name = "ctl\nvolume" }), codes.InvalidArgument},
		{"CreateVolume parameter key with NUL", createVolume(func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{"example.com/k\x00": "v"} }), codes.InvalidArgument},
		{"CreateVolume parameter value with DEL", createVolume(func(r *csi.CreateVolumeRequest) { r.Parameters = map[string]string{"example.com/k": "v\x7f"} }), codes.InvalidArgument},
		{"CreateSnapshot name with NUL", createSnapshot("ctl\x00snap", nil), codes.InvalidArgument},
		{"CreateSnapshot parameter value with NUL", createSnapshot("ctl-snap", map[string]string{"example.com/k": "\x00"}), codes.InvalidArgument},
		{"CreateSnapshot parameter key with C1 control", createSnapshot("ctl-snap", map[string]string{"example.com/\u0085": "v"}), codes.InvalidArgument},
		{"ControllerPublishVolume node_id with NUL", errOf(d.ControllerPublishVolume, &csi.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: "node-1\x00", VolumeCapability: drivertest.MountCapability()}), codes.InvalidArgument},
		{"GetCapacity parameter with NUL", errOf(d.GetCapacity, &csi.GetCapacityRequest{Parameters: map[string]string{"example.com/k": "a\x00b"}}), codes.InvalidArgument},
		{"ValidateVolumeCapabilities volume_context with NUL", errOf(d.ValidateVolumeCapabilities, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol, VolumeCapabilities: []*csi.VolumeCapability{drivertest.MountCapability()}, VolumeContext: map[string]string{"k": "\x00"}}), codes.InvalidArgument},
	}
	runCodeCases(t, cases)
	vols, err := d.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil || len(vols.GetEntries()) != 1 {
		t.Fatalf("requests with control characters created volumes: %v, %v", vols, err)
	}
	snaps, err := d.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil || len(snaps.GetEntries()) != 0 {
		t.Fatalf("requests with control characters created snapshots: %v, %v", snaps, err)
	}
}

// maximumVolumeSize is GetCapacity's maximum_volume_size over all zones.
func (d *testDriver) maximumVolumeSize(t *testing.T, block bool) int64 {
	t.Helper()
	resp, err := d.GetCapacity(context.Background(), &csi.GetCapacityRequest{VolumeCapabilities: []*csi.VolumeCapability{drivertest.Capability(block)}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetMaximumVolumeSize() == nil {
		t.Fatal("GetCapacity reports no maximum_volume_size")
	}
	return resp.GetMaximumVolumeSize().GetValue()
}

// TestVolumeSizeLimits: a size above the largest volume GetCapacity
// reports is OUT_OF_RANGE for mount and block volumes alike (CSI:
// CreateVolume Errors, "Unsupported capacity_range"); the largest is
// created; negative bytes and required_bytes above limit_bytes are
// INVALID_ARGUMENT (CapacityRange: "MUST NOT be negative"; General Error
// Table: "Invalid or unsupported field").
func TestVolumeSizeLimits(t *testing.T) {
	for _, block := range []bool{false, true} {
		t.Run(accessName(block), func(t *testing.T) {
			d := newTestDriver(t, nil)
			ctx := context.Background()
			largest := d.maximumVolumeSize(t, block)
			create := func(name string, r *csi.CapacityRange) func() error {
				return func() error {
					resp, err := d.CreateVolume(ctx, sizedRequest(name, block, r))
					if err == nil {
						_, err = d.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: resp.GetVolume().GetVolumeId()})
					}
					return err
				}
			}
			runCodeCases(t, []codeCase{
				{"the maximum", create("max", &csi.CapacityRange{RequiredBytes: largest}), codes.OK},
				{"one byte more", create("max-plus-1", &csi.CapacityRange{RequiredBytes: largest + 1}), codes.OutOfRange},
				{"MaxInt64", create("maxint", &csi.CapacityRange{RequiredBytes: math.MaxInt64}), codes.OutOfRange},
				{"MaxInt64 limit only", create("maxint-limit", &csi.CapacityRange{LimitBytes: math.MaxInt64}), codes.OK},
				{"limit below the default size", create("small-limit", &csi.CapacityRange{LimitBytes: 1 << 20}), codes.OK},
				{"negative required", create("negative", &csi.CapacityRange{RequiredBytes: -1}), codes.InvalidArgument},
				{"negative limit", create("negative-limit", &csi.CapacityRange{LimitBytes: math.MinInt64}), codes.InvalidArgument},
				{"required above limit", create("inverted", &csi.CapacityRange{RequiredBytes: 2 << 20, LimitBytes: 1 << 20}), codes.InvalidArgument},
			})
		})
	}
}

// TestMaxVolumeSizeFlag: --max-volume-size is what GetCapacity reports as
// maximum_volume_size, and one byte more is OUT_OF_RANGE, also for an
// expansion.
func TestMaxVolumeSizeFlag(t *testing.T) {
	const limit = 10 * gib
	d := newTestDriver(t, func(c *plugin.Config) { c.MaxVolumeSize = limit })
	ctx := context.Background()
	for _, block := range []bool{false, true} {
		if got := d.maximumVolumeSize(t, block); got != limit {
			t.Errorf("%s: GetCapacity maximum_volume_size = %d, want --max-volume-size %d", accessName(block), got, limit)
		}
		if _, err := d.CreateVolume(ctx, sizedRequest("over-"+accessName(block), block, &csi.CapacityRange{RequiredBytes: limit + 1})); codeOf(err) != codes.OutOfRange {
			t.Errorf("%s: CreateVolume of --max-volume-size+1 bytes: %v, want OutOfRange", accessName(block), err)
		}
	}
	vol := d.mustCreateVolume(drivertest.VolumeRequest("expand-over", gib, nil)).GetVolumeId()
	if _, err := d.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol, CapacityRange: &csi.CapacityRange{RequiredBytes: limit + 1}}); codeOf(err) != codes.OutOfRange {
		t.Errorf("expanding beyond --max-volume-size: %v, want OutOfRange", err)
	}
}

// TestZoneAccountingSurvivesHostileSizes: sizes near MaxInt64 cannot wrap
// a zone's usage around, neither on creation nor on expansion, and the
// accounting GetCapacity reports is the same after a restart on the same
// state.
func TestZoneAccountingSurvivesHostileSizes(t *testing.T) {
	d := newTestDriver(t, nil)
	ctx := context.Background()
	inC := &csi.TopologyRequirement{Requisite: zones("zone-c")}
	available := func() int64 {
		t.Helper()
		resp, err := d.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: zone("zone-c")})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetAvailableCapacity()
	}
	first := d.mustCreateVolume(drivertest.VolumeRequest("acct-1", gib, inC)).GetVolumeId()
	// gib + (MaxInt64-gib+1) wraps to MinInt64, which a sum-based check takes for "fits".
	if _, err := d.CreateVolume(ctx, drivertest.VolumeRequest("acct-wrap", math.MaxInt64-gib+1, inC)); codeOf(err) != codes.OutOfRange {
		t.Fatalf("CreateVolume whose size wraps zone-c's usage: %v, want OutOfRange", err)
	}
	d.mustCreateVolume(drivertest.VolumeRequest("acct-2", gib, inC))
	// 2Gi used - 1Gi + MaxInt64 wraps as well.
	if _, err := d.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: first, CapacityRange: &csi.CapacityRange{RequiredBytes: math.MaxInt64}}); codeOf(err) != codes.OutOfRange {
		t.Fatalf("ControllerExpandVolume to MaxInt64 in a full zone: %v, want OutOfRange", err)
	}
	if _, err := d.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: first, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 * gib}}); codeOf(err) != codes.ResourceExhausted {
		t.Fatalf("ControllerExpandVolume beyond a full zone: %v, want ResourceExhausted (TestExpandWaitsForRoom)", err)
	}
	if got := available(); got != 0 {
		t.Fatalf("zone-c available = %d, want 0", got)
	}
	d.restart(t)
	if got := available(); got != 0 {
		t.Fatalf("after a restart zone-c available = %d, want 0", got)
	}
	if _, err := d.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: first}); err != nil {
		t.Fatal(err)
	}
	if got := available(); got != gib {
		t.Fatalf("after deleting a 1Gi volume zone-c available = %d, want %d", got, gib)
	}
}

// TestSourceCheckedBeforeCopy: a restore or clone across access types is
// INVALID_ARGUMENT (CSI: CreateVolume Errors, "Source incompatible or not
// supported"), and one smaller than its source OUT_OF_RANGE ("Unsupported
// capacity_range"), decided before any data is copied. The sources' data
// is removed first, so that any copy attempt would fail with INTERNAL.
func TestSourceCheckedBeforeCopy(t *testing.T) {
	d := newTestDriver(t, nil)
	const size = 4 << 20
	type source struct{ volume, snapshot string }
	sources := map[bool]source{}
	for _, block := range []bool{false, true} {
		v := d.mustCreateVolume(sizedRequest("src-"+accessName(block), block, &csi.CapacityRange{RequiredBytes: size})).GetVolumeId()
		s := d.mustCreateSnapshot("snap-"+accessName(block), v, nil).GetSnapshotId()
		sources[block] = source{v, s}
	}
	for _, f := range d.dataFiles(t) {
		if err := os.RemoveAll(filepath.Join(d.dataDir(), f)); err != nil {
			t.Fatal(err)
		}
	}
	restore := func(snapshot string) *csi.VolumeContentSource {
		return drivertest.FromSnapshot(snapshot)
	}
	clone := func(volume string) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: volume}}}
	}
	create := func(name string, block bool, bytes int64, src *csi.VolumeContentSource) func() error {
		req := sizedRequest(name, block, &csi.CapacityRange{RequiredBytes: bytes})
		req.VolumeContentSource = src
		return errOf(d.CreateVolume, req)
	}
	var cases []codeCase
	for _, block := range []bool{false, true} {
		from, other := sources[block], accessName(!block)
		cases = append(cases,
			codeCase{"restore " + accessName(block) + " snapshot as " + other, create("x-restore-"+other, !block, size, restore(from.snapshot)), codes.InvalidArgument},
			codeCase{"clone " + accessName(block) + " volume as " + other, create("x-clone-"+other, !block, size, clone(from.volume)), codes.InvalidArgument},
			codeCase{"restore " + accessName(block) + " snapshot smaller", create("small-restore-"+accessName(block), block, size/2, restore(from.snapshot)), codes.OutOfRange},
			codeCase{"clone " + accessName(block) + " volume smaller", create("small-clone-"+accessName(block), block, size/2, clone(from.volume)), codes.OutOfRange},
		)
	}
	runCodeCases(t, cases)
	if files := d.dataFiles(t); len(files) != 0 {
		t.Fatalf("rejected requests left data behind: %v", files)
	}
}

// TestUnknownDriverParameters: a key in the driver's own prefix that it
// does not know is INVALID_ARGUMENT, as the README promises, on every RPC
// taking parameters; keys a CO adds in its own prefix are ignored.
// ValidateVolumeCapabilities answers without confirmed instead (CSI:
// "confirmed ... SHALL only be set if all ... parameters ... are supported").
func TestUnknownDriverParameters(t *testing.T) {
	d := newTestDriver(t, nil)
	ctx := context.Background()
	vol := d.mustCreateVolume(drivertest.VolumeRequest("params-source", gib, nil)).GetVolumeId()
	coKeys := map[string]string{"csi.storage.k8s.io/pvc/name": "claim", "csi.storage.k8s.io/pvc/namespace": "default", "csi.storage.k8s.io/pv/name": "pv-1"}
	typo := map[string]string{plugin.DefaultName + "/snapshotScop": "zone"}
	createVolume := func(name string, params map[string]string) func() error {
		req := drivertest.VolumeRequest(name, gib, nil)
		req.Parameters = params
		return errOf(d.CreateVolume, req)
	}
	createSnapshot := func(name string, params map[string]string) func() error {
		return errOf(d.CreateSnapshot, &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: vol, Parameters: params})
	}
	getCapacity := func(params map[string]string) func() error {
		return errOf(d.GetCapacity, &csi.GetCapacityRequest{Parameters: params})
	}
	runCodeCases(t, []codeCase{
		{"CreateVolume: unknown driver key", createVolume("p-1", typo), codes.InvalidArgument},
		{"CreateVolume: snapshot-only driver key", createVolume("p-2", map[string]string{plugin.ParamSnapshotScope: "zone"}), codes.InvalidArgument},
		{"CreateVolume: bare driver prefix", createVolume("p-3", map[string]string{plugin.DefaultName + "/": "x"}), codes.InvalidArgument},
		{"CreateVolume: the CO's keys", createVolume("p-4", coKeys), codes.OK},
		{"CreateSnapshot: unknown driver key", createSnapshot("p-5", typo), codes.InvalidArgument},
		{"CreateSnapshot: the CO's keys", createSnapshot("p-6", map[string]string{"csi.storage.k8s.io/volumesnapshot/name": "s", "csi.storage.k8s.io/volumesnapshotcontent/name": "c"}), codes.OK},
		{"GetCapacity: unknown driver key", getCapacity(typo), codes.InvalidArgument},
		{"GetCapacity: the CO's keys", getCapacity(coKeys), codes.OK},
	})
	resp, err := d.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: vol, VolumeCapabilities: []*csi.VolumeCapability{drivertest.MountCapability()}, Parameters: typo})
	if err != nil || resp.GetConfirmed() != nil || resp.GetMessage() == "" {
		t.Fatalf("ValidateVolumeCapabilities with an unknown driver parameter: %v, %v; want no confirmed and a message", resp, err)
	}
}
