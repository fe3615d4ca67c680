package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	mountutils "k8s.io/mount-utils"

	"github.com/zonepath/zonepath/driver/drivertest"
)

// flagsCapability is a MULTI_NODE_MULTI_WRITER filesystem capability with
// mount_flags: a mode that admits several targets on one node (spec.md
// NodePublishVolume, "T1!=T2" is OK for MULTI_NODE_...).
func flagsCapability(flags ...string) *csi.VolumeCapability {
	c := modeCapability(false, mnmw)
	c.GetMount().MountFlags = flags
	return c
}

// publishFlags publishes a staged filesystem volume at target with flags.
func (d *testDriver) publishFlags(id, staging, target string, flags ...string) error {
	_, err := d.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: flagsCapability(flags...),
	})
	return err
}

// mountOptionsAt returns the per-mount options of the topmost mount at
// path; the test is skipped when nothing is mounted there (a driver that
// may not mount only records its publishes).
func mountOptionsAt(t *testing.T, path string) []string {
	t.Helper()
	if !isMountPoint(path) {
		t.Skipf("%s is no mount point: this process cannot bind-mount, so no mount carries flags", path)
	}
	infos, err := mountutils.ParseMountInfo("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var opts []string
	for _, mi := range infos {
		if mi.MountPoint == path {
			opts = mi.MountOptions // the last one is on top
		}
	}
	return opts
}

// TestMountFlagsReachTheMount: each supported mount_flags entry is a
// per-mount option of the published bind mount (csi.proto
// MountVolume.mount_flags, "The mount options that can be used for the
// volume"), and an atime flag replaces the one the bind inherits. Only
// flags asked for are looked for: the rest are the source mount's (a /tmp
// may well be nosuid already).
func TestMountFlagsReachTheMount(t *testing.T) {
	cases := []struct {
		flags, want, absent []string
	}{
		{flags: []string{"nosuid", "nodev", "noexec", "noatime", "nodiratime"}, want: []string{"nosuid", "nodev", "noexec", "noatime", "nodiratime"}},
		{flags: []string{"relatime"}, want: []string{"relatime"}, absent: []string{"noatime"}},
		{flags: []string{"strictatime"}, absent: []string{"noatime", "relatime"}},
	}
	d := newTestDriver(t, nil)
	id, staging := d.stagedVolume(t, "mount-flags", false)
	for _, tc := range cases {
		t.Run(strings.Join(tc.flags, ","), func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "target")
			if err := d.publishFlags(id, staging, target, tc.flags...); err != nil {
				t.Fatalf("NodePublishVolume with mount_flags %v: %v", tc.flags, err)
			}
			t.Cleanup(func() { d.unpublish(t, id, target) })
			got := mountOptionsAt(t, target)
			for _, f := range tc.want {
				if !slices.Contains(got, f) {
					t.Errorf("mount_flags %v: the mount at the target has options %v, without %s", tc.flags, got, f)
				}
			}
			for _, f := range tc.absent {
				if slices.Contains(got, f) {
					t.Errorf("mount_flags %v: the mount at the target has options %v, with %s", tc.flags, got, f)
				}
			}
		})
	}
}

// TestMountFlagsRefused: a mount_flags entry outside the supported list,
// or two atime flags, is INVALID_ARGUMENT (General Error Table, "Invalid
// or unsupported field in the request") from every RPC that takes a
// capability, before the node touches the filesystem (no target is
// made), and ValidateVolumeCapabilities does not confirm it. The message
// never repeats an unsupported flag: mount_flags "MAY contain sensitive
// information" that the Plugin "MUST NOT leak".
func TestMountFlagsRefused(t *testing.T) {
	const secret = "password=s3cret"
	refused := [][]string{
		{secret}, {"ro"}, {"rw"}, {"bind"}, {"remount"}, {"defaults"}, {"uid=0"}, {"debug"}, {""},
		{"nosuid", "NOEXEC"}, {"noatime", "relatime"}, {"relatime", "strictatime"},
	}
	d := newTestDriver(t, nil)
	ctx := context.Background()
	id, staging := d.stagedVolume(t, "refused-flags", false)
	for i, flags := range refused {
		t.Run(strings.Join(flags, ","), func(t *testing.T) {
			target, otherStaging := filepath.Join(t.TempDir(), "target"), t.TempDir()
			// A driver that takes the flags mounts: undo it (both calls
			// are idempotent where nothing was done).
			t.Cleanup(func() {
				d.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target})
				d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: otherStaging})
			})
			checks := map[string]error{
				"NodePublishVolume": d.publishFlags(id, staging, target, flags...),
				"NodeStageVolume": func() error {
					_, err := d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: otherStaging, VolumeCapability: flagsCapability(flags...)})
					return err
				}(),
				"ControllerPublishVolume": func() error {
					_, err := d.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: id, NodeId: drivertest.NodeID, VolumeCapability: flagsCapability(flags...)})
					return err
				}(),
				"CreateVolume": func() error {
					req := drivertest.VolumeRequest(fmt.Sprintf("refused-flags-%d", i), 1<<20, nil)
					req.VolumeCapabilities = []*csi.VolumeCapability{flagsCapability(flags...)}
					_, err := d.CreateVolume(ctx, req)
					return err
				}(),
			}
			for rpc, err := range checks {
				if codeOf(err) != codes.InvalidArgument {
					t.Errorf("%s with mount_flags %q: %v, want INVALID_ARGUMENT", rpc, flags, err)
				}
				if strings.Contains(status.Convert(err).Message(), "s3cret") {
					t.Errorf("%s with mount_flags %q: the message repeats the flag: %q", rpc, flags, status.Convert(err).Message())
				}
			}
			if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused NodePublishVolume left %s behind (%v)", target, err)
			}
			resp, err := d.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: id, VolumeCapabilities: []*csi.VolumeCapability{flagsCapability(flags...)}})
			if err != nil || resp.GetConfirmed() != nil {
				t.Errorf("ValidateVolumeCapabilities with mount_flags %q: confirmed %v, %v; want not confirmed", flags, resp.GetConfirmed(), err)
			}
		})
	}
}

// TestMountFlagsIdempotency: spec.md NodePublishVolume, "T1=T2, P1=P2" is
// OK and "T1=T2, P1!=P2" ALREADY_EXISTS ("Volume published but is
// incompatible"); "T1!=T2" is OK for a MULTI_NODE_... mode. The flags
// compare as a set: order and repeats do not make another publish.
// NodeStageVolume likewise ("Volume published but is incompatible with
// the specified volume_capability").
func TestMountFlagsIdempotency(t *testing.T) {
	d := newTestDriver(t, nil)
	ctx := context.Background()
	id, staging := d.stagedVolume(t, "flags-idempotency", false)
	target, other := filepath.Join(t.TempDir(), "target"), filepath.Join(t.TempDir(), "other")
	steps := []struct {
		target string
		flags  []string
		want   codes.Code
	}{
		{target, []string{"nosuid", "noatime"}, codes.OK},
		{target, []string{"noatime", "nosuid", "nosuid"}, codes.OK},
		{target, []string{"nodev"}, codes.AlreadyExists},
		{target, nil, codes.AlreadyExists},
		{other, []string{"nodev"}, codes.OK},
	}
	for n, s := range steps {
		if got := codeOf(d.publishFlags(id, staging, s.target, s.flags...)); got != s.want {
			t.Errorf("step %d: NodePublishVolume at %s with %v: %s, want %s", n, filepath.Base(s.target), s.flags, got, s.want)
		}
	}
	for _, p := range []string{target, other} {
		d.unpublish(t, id, p)
	}

	flagged := t.TempDir()
	stage := func(flags ...string) error {
		_, err := d.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: flagged, VolumeCapability: flagsCapability(flags...)})
		return err
	}
	if err := stage("nosuid"); err != nil {
		t.Fatalf("NodeStageVolume with nosuid: %v", err)
	}
	t.Cleanup(func() {
		d.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: flagged})
	})
	if err := stage("nosuid"); err != nil {
		t.Errorf("the same NodeStageVolume again: %v, want OK", err)
	}
	if got := codeOf(stage("nodev")); got != codes.AlreadyExists {
		t.Errorf("NodeStageVolume at the same path with other mount_flags: %s, want ALREADY_EXISTS", got)
	}
}

// TestReaderOnlyModesPublishReadOnly: NodePublishVolume with a reader-only
// access mode places a read-only volume even when readonly is false
// (csi.proto: SINGLE_NODE_READER_ONLY "Can only be published once as
// readonly", MULTI_NODE_READER_ONLY "Can be published as readonly at
// multiple nodes"; Kubernetes sends a ReadOnlyMany claim that way). The
// same publish with readonly=true is the same publish (OK), a read-write
// mode at that target another one (ALREADY_EXISTS).
func TestReaderOnlyModesPublishReadOnly(t *testing.T) {
	for _, block := range []bool{false, true} {
		for _, mode := range []csi.VolumeCapability_AccessMode_Mode{snro, mnro} {
			t.Run(accessName(block)+"/"+mode.String(), func(t *testing.T) {
				d := newTestDriver(t, nil)
				id, staging := d.stagedVolume(t, "reader-only", block)
				target := filepath.Join(t.TempDir(), "target")
				publish := func(mode csi.VolumeCapability_AccessMode_Mode, readonly bool) error {
					_, err := d.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
						TargetPath: target, VolumeCapability: modeCapability(block, mode), Readonly: readonly})
					return err
				}
				if err := publish(mode, false); err != nil {
					t.Fatalf("NodePublishVolume, %s, readonly=false: %v", mode, err)
				}
				t.Cleanup(func() { d.unpublish(t, id, target) })
				if err := publish(mode, true); err != nil {
					t.Errorf("the same publish with readonly=true: %v, want OK", err)
				}
				if got := codeOf(publish(mnmw, false)); got != codes.AlreadyExists {
					t.Errorf("a MULTI_NODE_MULTI_WRITER publish at the same target: %s, want ALREADY_EXISTS", got)
				}
				if !isMountPoint(target) {
					t.Skipf("%s is no mount point: this process cannot bind-mount", target)
				}
				if block {
					assertRefusesWrites(t, mode.String()+" publish", target)
					return
				}
				if err := os.WriteFile(filepath.Join(target, "f"), []byte("x"), 0o600); !errors.Is(err, syscall.EROFS) {
					t.Errorf("a write below a %s publish: %v, want EROFS", mode, err)
				}
			})
		}
	}
}
