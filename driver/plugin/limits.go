package plugin

import (
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/zonepath/zonepath/driver/world"
)

// unlimitedCapacity is the largest volume a zone without a capacity takes,
// and what GetCapacity reports as its free bytes: 1 PiB, large enough for
// any test, small enough that sums of a few zones stay far from overflow.
const unlimitedCapacity = 1 << 50

// maxVolumeSize is the largest volume the driver makes of the access
// type, whatever zones are free: the largest zone (unlimitedCapacity for
// one without a capacity), --max-volume-size, and for block volumes the
// largest file the data directory holds. GetCapacity reports no larger
// maximum_volume_size, and CreateVolume and ControllerExpandVolume answer
// anything larger with OUT_OF_RANGE (spec: CreateVolume Errors,
// "Unsupported capacity_range"). A size within it that no candidate zone
// has room for now is RESOURCE_EXHAUSTED instead: room can free up.
func (p *Plugin) maxVolumeSize(block bool) int64 {
	var largest int64
	for _, z := range p.topo.Zones {
		largest = max(largest, zoneMaxVolume(z))
	}
	if p.cfg.MaxVolumeSize > 0 {
		largest = min(largest, p.cfg.MaxVolumeSize)
	}
	if block {
		largest = min(largest, p.maxFileSize)
	}
	return largest
}

func zoneMaxVolume(z world.ZoneInfo) int64 {
	if z.CapacityBytes < 0 {
		return unlimitedCapacity
	}
	return z.CapacityBytes
}

// room is how many more bytes of volumes zone z takes when used bytes are
// taken. A zone without a capacity takes any number of volumes, but its
// usage stays an int64: compared as size > room, never as used+size >
// capacity, no sum can wrap around and pass for a small one.
func room(z world.ZoneInfo, used int64) int64 {
	capacity := z.CapacityBytes
	if capacity < 0 {
		capacity = math.MaxInt64
	}
	return capacity - max(used, 0)
}

// addCapped adds non-negative byte counts, stopping at MaxInt64: GetCapacity
// sums the free bytes of zones whose capacities may each be near it.
func addCapped(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// probeMaxFileSize finds the largest sparse file the filesystem of dir
// holds, up to limit (ext4 with 4 KiB blocks: 16 TiB), by growing a probe
// file: a block volume is such a file, and a size the filesystem refuses
// (EFBIG) is the caller's OUT_OF_RANGE, not an INTERNAL error after the
// fact. Sparse truncation allocates nothing, so the probe is cheap.
func probeMaxFileSize(dir string, limit int64) (int64, error) {
	key := fmt.Sprintf("%s\x00%d", dir, limit)
	if size, ok := probedSizes.Load(key); ok {
		return size.(int64), nil
	}
	size, err := probeFile(dir, limit)
	if err == nil {
		probedSizes.Store(key, size)
	}
	return size, err
}

// probedSizes are the answers of probeMaxFileSize by directory and limit:
// node plugins that share a data directory in one process (fakezones runs
// thousands) probe it once.
var probedSizes sync.Map

// probeFile is probeMaxFileSize without the memo.
func probeFile(dir string, limit int64) (int64, error) {
	f, err := os.CreateTemp(dir, ".size-probe-")
	if err != nil {
		return 0, fmt.Errorf("probing the largest file in %s: %w", dir, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fits := func(n int64) bool { return f.Truncate(n) == nil }
	if fits(limit) {
		return limit, nil
	}
	lo, hi := int64(0), limit // fits(lo) and !fits(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
