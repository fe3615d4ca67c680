package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/zonepath/zonepath/driver/drivertest"
	"github.com/zonepath/zonepath/internal/gobuild"
)

// builtDir holds the binary buildDriver built, removed by TestMain.
var builtDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// buildDriver builds bin/zonepath once for every test of this package
// that runs the real process.
var buildDriver = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "zonepath-bin-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "zonepath")
	if err := gobuild.Build("", bin, "."); err != nil {
		return "", fmt.Errorf("building the driver: %w", err)
	}
	return bin, nil
})

// driverBinary is buildDriver's binary, or skips the test under -short.
func driverBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the driver binary")
	}
	bin, err := buildDriver()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// driverProcess is bin/zonepath serving on dir/csi.sock with its state
// in dir/state (and so its data in dir/state/data).
type driverProcess struct {
	cmd  *exec.Cmd
	conn *grpc.ClientConn
	ctrl csi.ControllerClient
}

func startDriver(t *testing.T, bin, dir string) *driverProcess {
	t.Helper()
	sock := filepath.Join(dir, "csi.sock")
	cmd := exec.Command(bin, "--endpoint", "unix://"+sock, "--nodeid", "n1", "--node-zone", "zone-a",
		"--state-dir", filepath.Join(dir, "state"), "--mount", "none")
	cmd.Stderr = driverLog(t, filepath.Join(dir, "driver.log"))
	os.Remove(sock) // left behind by a killed process
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Never leave a driver behind, also when the test fails early.
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		_, err := os.Stat(sock)
		return err == nil, nil
	}); err != nil {
		t.Fatal("driver did not create its socket")
	}
	conn := drivertest.Dial(t, "unix://"+sock)
	// The socket file exists a moment before the driver accepts
	// connections: wait until it answers.
	if _, err := csi.NewIdentityClient(conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("driver does not answer on %s: %v", sock, err)
	}
	return &driverProcess{cmd: cmd, conn: conn, ctrl: csi.NewControllerClient(conn)}
}

// driverLog appends the driver's log to path; the first start on a
// directory has its tail shown when the test fails.
func driverLog(t *testing.T, path string) *os.File {
	t.Helper()
	_, err := os.Stat(path)
	first := os.IsNotExist(err)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		if log, _ := os.ReadFile(path); first && t.Failed() {
			t.Logf("driver log %s:\n%s", path, log[max(0, len(log)-8<<10):])
		}
	})
	return f
}

// kill ends the process with SIGKILL and waits for it: the state
// database is free once the process is gone.
func (d *driverProcess) kill(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.cmd.Wait()
	d.conn.Close()
}

// TestRestartLosesNothing kills the driver process with SIGKILL right
// after a burst of acknowledged writes, starts it again on the same state
// directory and checks that every volume, snapshot (with its topology)
// and publication is still there.
func TestRestartLosesNothing(t *testing.T) {
	bin := driverBinary(t)
	dir := t.TempDir()
	d := startDriver(t, bin, dir)
	ctrl := d.ctrl
	ctx := context.Background()
	var created []string
	for i := range 50 {
		v, err := ctrl.CreateVolume(ctx, drivertest.VolumeRequest(fmt.Sprintf("v%d", i), 0, nil))
		if err != nil {
			t.Fatal(err)
		}
		created = append(created, v.GetVolume().GetVolumeId())
	}
	snaps := map[string]*csi.Snapshot{}
	for i := range 20 {
		s, err := ctrl.CreateSnapshot(ctx, drivertest.SnapshotRequest(fmt.Sprintf("s%d", i), created[i], nil))
		if err != nil {
			t.Fatal(err)
		}
		snaps[s.GetSnapshot().GetSnapshotId()] = s.GetSnapshot()
	}
	if _, err := ctrl.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{VolumeId: created[0], NodeId: "n1", VolumeCapability: drivertest.MountCapability()}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: created[49]}); err != nil {
		t.Fatal(err)
	}
	created = created[:49]
	d.kill(t)

	d = startDriver(t, bin, dir)
	ctrl = d.ctrl
	vols, err := ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, e := range vols.GetEntries() {
		listed = append(listed, e.GetVolume().GetVolumeId())
		if e.GetVolume().GetVolumeId() == created[0] && fmt.Sprint(e.GetStatus().GetPublishedNodeIds()) != "[n1]" {
			t.Errorf("publication lost: volume %s published to %v, want [n1]", created[0], e.GetStatus().GetPublishedNodeIds())
		}
	}
	slices.Sort(listed)
	slices.Sort(created)
	if diff := cmp.Diff(created, listed); diff != "" {
		t.Errorf("after restart ListVolumes differs from the acknowledged volumes (-want +got):\n%s", diff)
	}
	got, err := ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetEntries()) != len(snaps) {
		t.Errorf("after restart ListSnapshots = %d snapshots, want %d", len(got.GetEntries()), len(snaps))
	}
	for _, e := range got.GetEntries() {
		want := snaps[e.GetSnapshot().GetSnapshotId()]
		if !proto.Equal(e.GetSnapshot(), want) {
			t.Errorf("snapshot after restart = %v, want %v", e.GetSnapshot(), want)
		}
	}
}
