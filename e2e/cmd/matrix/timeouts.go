package main

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// snapshotterMaxBackoff is csi-snapshotter's --retry-interval-max default
// (external-snapshotter v8.7.0), which zonepath-cluster up leaves alone.
// The sidecar polls a VolumeSnapshotContent that is not ready yet with a
// per-object exponential backoff (pkg/sidecar-controller
// snapshot_controller_base.go, processNextItem: AddRateLimited while
// checkandUpdateContentStatus says "not ready"), and every event on the
// content doubles it too, up to this maximum: a group member gets several
// from the snapshot-controller. A snapshot that is compliantly ready a few
// seconds after the cut can so be seen ready up to this long later.
const snapshotterMaxBackoff = 5 * time.Minute

// checkSnapshotTimeout rejects a driver file whose Timeouts.SnapshotCreate
// (the e2e suite's wait for VolumeSnapshots) is shorter than the
// snapshotter's longest backoff: such a wait can fail a compliant driver
// whose snapshots are not ready at once. Unset is the framework's default
// (5m).
func checkSnapshotTimeout(driverFile string) error {
	data, err := os.ReadFile(driverFile)
	if err != nil {
		return err
	}
	var f struct {
		Timeouts struct {
			SnapshotCreate string `json:"SnapshotCreate"`
		} `json:"Timeouts"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%s: %w", driverFile, err)
	}
	if f.Timeouts.SnapshotCreate == "" {
		return nil
	}
	d, err := time.ParseDuration(f.Timeouts.SnapshotCreate)
	if err != nil {
		return fmt.Errorf("%s: Timeouts.SnapshotCreate: %w", driverFile, err)
	}
	if d < snapshotterMaxBackoff {
		return fmt.Errorf("%s: Timeouts.SnapshotCreate %s is shorter than csi-snapshotter's --retry-interval-max (%s), the longest the sidecar may take to see a snapshot that is not ready at once become ready", driverFile, d, snapshotterMaxBackoff)
	}
	return nil
}
