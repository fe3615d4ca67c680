package driverext

import "fmt"

// ZoneOutage is the extension file's zoneOutage section, for the zone
// outage spec: a zone the suite may take down and bring back, and the
// commands that do it. Optional: the spec skips without it.
type ZoneOutage struct {
	// Segment is the zone that goes down. One of Segments, and another of
	// Segments must share its region (RegionKey): region-wide snapshots
	// restore there while it is down.
	Segment Segment `json:"segment"`
	// Zone names the zone to the commands, as $ZONE.
	Zone string `json:"zone"`
	// DownCommand takes the zone down: its volumes and snapshot copies
	// inaccessible, its nodes NotReady. UpCommand brings it back, with
	// its data. Both run with sh -c, KUBECONFIG set to the suite's
	// kubeconfig and ZONE to Zone (zonepath on fake zones:
	// zonepath-cluster zone down|up "$ZONE" --work-dir ...).
	DownCommand string `json:"downCommand"`
	UpCommand   string `json:"upCommand"`
}

// zoneOutageKeys are the section's keys, for the known-keys message.
var zoneOutageKeys = "zoneOutage.{segment, zone, downCommand, upCommand}"

func (f *File) validateZoneOutage(topologyKeys []string) error {
	z := f.ZoneOutage
	switch {
	case z == nil:
		return nil
	case len(z.Segment) == 0 || z.Zone == "" || z.DownCommand == "" || z.UpCommand == "":
		return fmt.Errorf("zoneOutage: segment, zone, downCommand and upCommand are all required")
	case f.RegionKey == "":
		return fmt.Errorf("zoneOutage: needs regionKey, to find the segments of the zone's region")
	}
	if err := z.Segment.check(topologyKeys); err != nil {
		return fmt.Errorf("zoneOutage.segment: %w", err)
	}
	if f.RegionMate(z.Segment) == nil {
		return fmt.Errorf("zoneOutage.segment: %s: no other of segments shares its region (%s), where region-wide snapshots restore meanwhile", z.Segment, f.RegionKey)
	}
	return nil
}

// RegionMate is the first of Segments other than seg in seg's region
// (RegionKey), or nil.
func (f *File) RegionMate(seg Segment) Segment {
	for _, s := range f.Segments {
		if s.String() != seg.String() && s[f.RegionKey] == seg[f.RegionKey] {
			return s
		}
	}
	return nil
}

// ZoneOutageMissing is why the zone outage spec cannot run, or "".
func (f *File) ZoneOutageMissing() string {
	if why := f.noTopologyMissing(); why != "" {
		return why
	}
	switch {
	case f.ZoneOutage == nil:
		return "driver ext: zoneOutage is not set (a zone the suite may take down, and the commands)"
	case len(f.RegionWideSnapshotClassParameters) == 0:
		return f.RegionWideMissing()
	}
	return f.SnapshotTopologyMissing()
}
