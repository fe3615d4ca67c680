package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// A crash leaves data without a record in two windows, by design: data is
// written before its record is committed (CreateVolume, CreateSnapshot),
// and removed after its record is deleted (DeleteVolume, DeleteSnapshot);
// a snapshot being cut also leaves its temporary file. The controller
// reclaims these at start-up, before it serves, when no request can be
// between the two steps.
//
// Only the controller reclaims: it alone creates data and owns the
// records. Node plugins of the same machine share the data directory but
// have state of their own, without the volumes, so they must never
// judge what is an orphan. controllerLock makes sure of that: one
// controller per data directory.

// issuedID matches the IDs newID issues, and only those: a file whose
// name is anything else was not made by the driver and is left alone.
var issuedID = regexp.MustCompile(`^(` + volumePrefix + `|` + snapshotPrefix + `)[0-9a-f]{24}$`)

// dataKinds are the subdirectories of the data directory, the ID prefix
// of what they hold and the suffixes a data file's name has after its ID.
var dataKinds = []struct {
	dir, prefix string
	suffixes    []string
}{
	{"volumes", volumePrefix, []string{"", ".img"}},
	{"snapshots", snapshotPrefix, []string{".tar", ".img"}},
}

// reclaim removes the temporary files and the data of IDs live says have
// no record, and returns the paths it removed.
func (d *dataDir) reclaim(live func(id string) bool) ([]string, error) {
	var removed []string
	for _, kind := range dataKinds {
		dir := filepath.Join(d.root, kind.dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			return removed, fmt.Errorf("reading %s: %w", dir, err)
		}
		for _, e := range entries {
			id, temp, ok := parseDataName(e.Name(), kind.prefix, kind.suffixes)
			if !ok || (!temp && live(id)) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			if err := os.RemoveAll(path); err != nil {
				return removed, fmt.Errorf("removing %s: %w", path, err)
			}
			removed = append(removed, path)
		}
	}
	return removed, nil
}

// parseDataName splits a data directory entry into the ID it belongs to
// and whether it is a temporary file; ok is false for any name the
// driver does not make.
func parseDataName(name, prefix string, suffixes []string) (id string, temp, ok bool) {
	base, temp := strings.CutSuffix(name, tempSuffix)
	for _, suffix := range suffixes {
		id, found := strings.CutSuffix(base, suffix)
		if found && strings.HasPrefix(id, prefix) && issuedID.MatchString(id) {
			return id, temp, true
		}
	}
	return "", false, false
}

// takeDataDir makes this controller the data directory's owner and
// removes what a crash left there.
func (p *Plugin) takeDataDir() error {
	lock, err := controllerLock(p.data.root)
	if err != nil {
		return err
	}
	p.lock = lock
	if err := p.reclaimData(); err != nil {
		return fmt.Errorf("reclaiming crash leftovers: %w", err)
	}
	return nil
}

// reclaimData removes what a crash left in the data directory: see the
// comment at the top of this file.
func (p *Plugin) reclaimData() error {
	removed, err := p.data.reclaim(func(id string) bool {
		if strings.HasPrefix(id, snapshotPrefix) {
			return p.store.Snapshot(id) != nil
		}
		return p.store.Volume(id) != nil
	})
	for _, path := range removed {
		klog.V(2).InfoS("Removed crash leftover", "path", path)
	}
	if len(removed) > 0 {
		klog.InfoS("Reclaimed data no record points to, left by a crash", "files", len(removed), "dataDir", p.data.root)
	}
	return err
}

const controllerLockFile = "controller.lock"

// controllerLock takes the data directory for this controller, so that
// a second controller on it fails at start instead of reclaiming the
// first one's data as orphans. The lock lives as long as the returned
// file stays open, and ends with the process.
func controllerLock(root string) (*os.File, error) {
	path := filepath.Join(root, controllerLockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking data directory: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("data directory %s is in use by another controller (%s is locked)", root, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return f, nil
}
